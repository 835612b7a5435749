"""Changes to projects that touch several rows, each in one transaction with its audit event."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from flagadmin.api.errors import NameExistsError
from flagadmin.audit import record_event
from flagadmin.models import Role, User
from projects.models import Environment, Project, ProjectEnvironment, ProjectRoleAssignment

PROJECT_EXISTS_MESSAGE = "A project with this id already exists."


def create_project(
    *,
    id: str,
    name: str,
    description: str | None,
    mode: str,
    default_stickiness: str,
    environments: list[str] | None,
    actor: object,
) -> Project:
    """Create a project with the given environments enabled (every enabled environment when
    None). A user (signed in, or acting through a personal or service-account token) becomes
    its Owner; an admin token leaves it without owner. Raises NameExistsError when the id is
    taken, also when a concurrent request took it first."""
    if Project.objects.filter(pk=id).exists():
        raise NameExistsError(PROJECT_EXISTS_MESSAGE)
    with transaction.atomic():
        try:
            # A savepoint: the insert that loses a race fails alone and becomes the same 409.
            with transaction.atomic():
                project = Project.objects.create(
                    id=id,
                    name=name,
                    description=description,
                    mode=mode,
                    default_stickiness=default_stickiness,
                )
        except IntegrityError as exc:
            raise NameExistsError(PROJECT_EXISTS_MESSAGE) from exc
        if environments is None:
            environments = list(
                Environment.objects.filter(enabled=True).values_list("name", flat=True)
            )
        ProjectEnvironment.objects.bulk_create(
            ProjectEnvironment(project=project, environment_id=name) for name in environments
        )
        if isinstance(actor, User):
            ProjectRoleAssignment.objects.create(project=project, role_id=Role.OWNER, user=actor)
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


def archive_project(*, project: Project, actor: object) -> Project:
    """Archive the project: it leaves the active list and takes no new flags. Archiving an
    archived project changes nothing and records nothing."""
    return _set_archived(project=project, archived=True, actor=actor)


def revive_project(*, project: Project, actor: object) -> Project:
    """Bring an archived project back. Reviving an active project changes nothing."""
    return _set_archived(project=project, archived=False, actor=actor)


def _set_archived(*, project: Project, archived: bool, actor: object) -> Project:
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
                data={"id": project.pk, "archivedAt": now.isoformat() if archived else None},
            )
    project.refresh_from_db()
    return project


def add_project_access(
    *,
    project: Project,
    role_ids: list[int],
    user_ids: list[int],
    group_ids: list[int],
    actor: object,
) -> None:
    """Give every listed user and group every listed project role in the project (the ids are
    checked by the request serializer). Assignments that exist already are kept as they are
    (their assignment time orders the owners), so repeating a call changes nothing and
    records nothing."""
    with transaction.atomic():
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
        # ignore_conflicts: a concurrent identical call may have inserted some meanwhile; the
        # unique constraints keep one row each.
        ProjectRoleAssignment.objects.bulk_create(
            [
                ProjectRoleAssignment(project=project, role_id=role, user_id=user, group_id=group)
                for role, user, group in new
            ],
            ignore_conflicts=True,
        )
        record_event(
            "project-access-added",
            actor=actor,
            project=project.pk,
            data={
                "roles": sorted({role for role, _, _ in new}),
                "users": sorted({user for _, user, _ in new if user is not None}),
                "groups": sorted({group for _, _, group in new if group is not None}),
            },
        )
