"""Changes to projects that touch several rows, each in one transaction with its audit event."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import connection, transaction
from django.utils import timezone

from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.db import unique_or_conflict
from flagadmin.core.errors import (
    InvalidInputError,
    InvalidOperationError,
    NameExistsError,
    NotFoundError,
    Problem,
)
from flagadmin.core.locks import MembersWrite, members_write
from flagadmin.core.models import ROOT_ROLE_TYPES, AccountType, Role, User
from flagadmin.core.sql import column
from flagadmin.core.times import api_timestamp
from groups.models import Group
from projects.models import (
    OWNER_NAMES,
    Environment,
    Project,
    ProjectEnvironment,
    ProjectListVersion,
    ProjectRoleAssignment,
)

PROJECT_EXISTS_MESSAGE = "A project with this id already exists."


def _id_taken_error(project_id: str) -> NameExistsError | None:
    if Project.objects.filter(pk=project_id).exists():
        return NameExistsError(PROJECT_EXISTS_MESSAGE)
    return None


def create_project(
    *,
    id: str,
    name: str,
    description: str | None,
    mode: str,
    default_stickiness: str,
    environments: list[str] | None,
    actor: Actor,
) -> Project:
    """Create a project with the given environments enabled (every enabled environment when
    None). A user (signed in, or acting through a personal or service-account token) becomes
    its Owner; an admin token leaves it without owner. Raises NameExistsError when the id is
    taken, also when a concurrent request took it first."""
    if error := _id_taken_error(id):
        raise error
    with transaction.atomic():
        with unique_or_conflict(lambda: _id_taken_error(id)):
            project = Project.objects.create(
                id=id,
                name=name,
                description=description,
                mode=mode,
                default_stickiness=default_stickiness,
            )
        if environments is None:
            environments = list(
                Environment.objects.filter(enabled=True).values_list("name", flat=True)
            )
        ProjectEnvironment.objects.bulk_create(
            ProjectEnvironment(project=project, environment_id=name) for name in environments
        )
        if isinstance(actor, User):
            # A person deleted while creating the project leaves it without owner.
            with members_write() as members:
                if members.hold(User, [actor.pk]):
                    ProjectRoleAssignment.objects.create(
                        project=project, role_id=Role.OWNER, user=actor
                    )
        record_event(
            "project-created",
            actor=actor,
            project=project.pk,
            data={
                "id": project.pk,
                "name": name,
                "description": description,
                "mode": mode,
                "defaultStickiness": default_stickiness,
                "environments": environments,
            },
        )
    return project


ACTIVE_FLAGS_REFUSAL = "You can not archive a project with active feature flags"


def archive_project(*, project: Project, actor: Actor) -> Project:
    """Archive the project: it leaves the active list and takes no new flags. Archiving an
    archived project changes nothing and records nothing. Refused while the project has
    active flags (`refuse_archive_with_active_flags`)."""
    with transaction.atomic():
        refuse_archive_with_active_flags(project)
        return _set_archived(project=project, archived=True, actor=actor)


def refuse_archive_with_active_flags(project: Project) -> None:
    """Raise Unleash's 403 `InvalidOperationError` when `project` has a flag that is not
    archived; call inside the transaction that archives it (the API's, the Django admin's).

    On PostgreSQL the project's flag counts are locked first, until that transaction ends:
    every write that makes a flag active (creation, revival) changes one of them, through the
    triggers of `features.ProjectFlagCount`, in its own transaction. So a creation not yet
    committed is waited for, then seen; one that comes after waits for the archive. The rows
    are made first for every type and stale state (at zero, as a count row stays when its
    flags go), so that a flag of a type the project never had is held too. SQLite's IMMEDIATE
    transactions already serialise the writers."""
    if connection.features.has_select_for_update:
        # Through the reverse relations: the flags' app sits above this one.
        counts = project.flag_counts
        flag_type = project.features.model._meta.get_field("type")
        counts.model.objects.bulk_create(
            [
                counts.model(project=project, type=value, stale=stale, total=0)
                for value, _ in flag_type.choices
                for stale in (False, True)
            ],
            ignore_conflicts=True,
        )
        # In the writers' order of these rows (`features.locks`).
        list(
            counts.order_by("type", "stale")
            .select_for_update(no_key=True)
            .values_list("pk", flat=True)
        )
    if project.features.filter(archived_at__isnull=True).exists():
        raise InvalidOperationError(ACTIVE_FLAGS_REFUSAL)


def revive_project(*, project: Project, actor: Actor) -> Project:
    """Bring an archived project back. Reviving an active project changes nothing."""
    return _set_archived(project=project, archived=False, actor=actor)


def _set_archived(*, project: Project, archived: bool, actor: Actor) -> Project:
    now = timezone.now()
    with transaction.atomic():
        # The conditional update decides, so two concurrent archives record one event.
        changed = Project.objects.filter(pk=project.pk, archived_at__isnull=archived).update(
            archived_at=now if archived else None, updated_at=now
        )
        if changed:
            record_event(
                "project-archived" if archived else "project-revived",
                actor=actor,
                project=project.pk,
                data={"id": project.pk, "archivedAt": api_timestamp(now) if archived else None},
            )
    project.refresh_from_db()
    return project


PROJECT_NOT_FOUND = "Project with id {} does not exist"

# Why an id cannot be given or get project roles (said of the id's place in the request).
NO_SUCH_ROLE = "must be the id of an existing project role"
ROOT_ROLE = "must be the id of a project role, not of a root role"
NO_SUCH_GROUP = "must be the id of an existing group"
NO_SUCH_USER = "must be the id of an existing user"


def role_refusals(role_ids: Sequence[int], members: MembersWrite | None = None) -> dict[int, str]:
    """Why each of `role_ids` cannot be given in a project, by position: no such role, or a
    root role. With `members` (a write of members under way), the roles are held until it
    commits; without, it is a read that a grant checks again."""
    if members is not None:
        members.hold(Role, role_ids)
    types = dict(Role.objects.filter(id__in=role_ids).values_list("id", "type"))
    refusals = {}
    for index, role_id in enumerate(role_ids):
        if role_id not in types:
            refusals[index] = NO_SUCH_ROLE
        elif types[role_id] in ROOT_ROLE_TYPES:
            refusals[index] = ROOT_ROLE
    return refusals


def group_refusals(group_ids: Sequence[int], members: MembersWrite | None = None) -> dict[int, str]:
    """The groups of `group_ids` that do not exist, by position (`role_refusals`)."""
    if members is not None:
        present = members.hold(Group, group_ids)
    else:
        present = set(Group.objects.filter(pk__in=group_ids).values_list("pk", flat=True))
    return {i: NO_SUCH_GROUP for i, group_id in enumerate(group_ids) if group_id not in present}


def user_refusals(user_ids: Sequence[int], members: MembersWrite | None = None) -> dict[int, str]:
    """The people of `user_ids` that do not exist (system users are no people), by position
    (`role_refusals`)."""
    if members is not None:
        not_system = f"{column(User, 'account_type')} <> %s"
        present = members.hold(User, user_ids, where=not_system, params=[AccountType.SYSTEM.value])
    else:
        people = User.objects.filter(pk__in=user_ids).exclude(account_type=AccountType.SYSTEM)
        present = set(people.values_list("pk", flat=True))
    return {i: NO_SUCH_USER for i, user_id in enumerate(user_ids) if user_id not in present}


def add_project_access(
    *,
    project: Project,
    role_ids: list[int],
    user_ids: list[int],
    group_ids: list[int],
    actor: Actor,
) -> None:
    """Give every listed user and group every listed project role in the project. Assignments
    that exist already are kept as they are (their assignment time orders the owners), so
    repeating a call changes nothing and records nothing. The event lists what this call's
    insert added: of concurrent identical calls, only the one whose rows were stored records
    them.

    The request serializer has checked the ids (`role_refusals`, ...); under the members' lock
    they are held, and one deleted or changed since is refused here (400 naming it), as is a
    project deleted since (404)."""
    with members_write() as members:
        refused = [
            Problem.of([field, str(index)], message, refused=ids[index])
            for field, ids, refusals in (
                ("roles", role_ids, role_refusals(role_ids, members)),
                ("groups", group_ids, group_refusals(group_ids, members)),
                ("users", user_ids, user_refusals(user_ids, members)),
            )
            for index, message in refusals.items()
        ]
        if refused:
            raise InvalidInputError(*refused)
        if not members.hold(Project, [project.pk]):
            raise NotFoundError(PROJECT_NOT_FOUND.format(project.pk))
        existing = set(
            ProjectRoleAssignment.objects.filter(project=project, role_id__in=role_ids).values_list(
                "role_id", "user_id", "group_id"
            )
        )
        wanted = [(role, user, None) for role in role_ids for user in user_ids] + [
            (role, None, group) for role in role_ids for group in group_ids
        ]
        new = [key for key in wanted if key not in existing]
        if not new:
            return
        added = _insert_assignments(project, new)
        if not added:
            return
        record_event(
            "project-access-added",
            actor=actor,
            project=project.pk,
            data={
                "roles": sorted({role for role, _, _ in added}),
                "users": sorted({user for _, user, _ in added if user is not None}),
                "groups": sorted({group for _, _, group in added if group is not None}),
            },
        )


Holder = tuple[int, int | None, int | None]

# Rows per INSERT: 5 parameters each, well under every database's parameter limit.
_INSERT_BATCH = 200


def _insert_assignments(project: Project, holders: list[Holder]) -> list[Holder]:
    """Insert `(role, user, group)` assignments; the ones this insert added.

    A concurrent identical call may have inserted some of them since they were read: the unique
    constraints keep one row each (ON CONFLICT DO NOTHING waits for that call's transaction),
    and RETURNING tells which rows are this call's, which `bulk_create(ignore_conflicts=True)`
    cannot (it wrote an event for rows another call had added)."""
    meta = ProjectRoleAssignment._meta
    fields = [meta.get_field(name) for name in ("project", "role", "user", "group", "created_at")]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    table = connection.ops.quote_name(meta.db_table)
    returned = ", ".join(connection.ops.quote_name(field.column) for field in fields[1:4])
    now = fields[4].get_db_prep_save(timezone.now(), connection)
    added: list[Holder] = []
    with connection.cursor() as cursor:
        for start in range(0, len(holders), _INSERT_BATCH):
            batch = holders[start : start + _INSERT_BATCH]
            values = ", ".join(["(%s, %s, %s, %s, %s)"] * len(batch))
            params = [
                value
                for role, user, group in batch
                for value in (project.pk, role, user, group, now)
            ]
            cursor.execute(
                f"INSERT INTO {table} ({columns}) VALUES {values} "
                f"ON CONFLICT DO NOTHING RETURNING {returned}",
                params,
            )
            added.extend((role, user, group) for role, user, group in cursor.fetchall())
    return added


def redraw_list_versions() -> int:
    """Draw a new version for every project and for the owners' names (`ProjectListVersion`),
    making any row that is missing: every worker computes every entry of the projects list
    again. For data written with the triggers off (a restore, a replica promoted with
    `session_replication_role = replica`). Returns the number of versions drawn."""
    keys = [OWNER_NAMES, *Project.objects.values_list("pk", flat=True)]
    ProjectListVersion.objects.bulk_create(
        [ProjectListVersion(project_id=key, version=uuid.uuid4().hex) for key in keys],
        update_conflicts=True,
        unique_fields=["project_id"],
        update_fields=["version"],
    )
    return len(keys)
