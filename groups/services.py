"""Business rules of groups: each write is one transaction with its audit event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils import timezone

from flagadmin.core.actors import Actor, audit_identity
from flagadmin.core.audit import record_event
from flagadmin.core.db import unique_or_conflict
from flagadmin.core.errors import InvalidInputError, NameExistsError, NotFoundError, Problem
from flagadmin.core.locks import members_write
from flagadmin.core.models import Role, User
from flagadmin.core.times import api_timestamp
from groups.models import Group, GroupMembership

GROUP_NOT_FOUND = "No group found"
GROUP_NAME_EXISTS = "Group name already exists"


# --- reading -------------------------------------------------------------------------------


def group_snapshot(group: Group, user_ids: Sequence[int]) -> dict[str, Any]:
    """What the audit events record about a group: its details and its members' ids (sorted,
    so that sending the same members in another order is not a change)."""
    return {
        "id": group.pk,
        "name": group.name,
        "description": group.description,
        "mappingsSSO": list(group.mappings_sso),
        "rootRole": group.root_role_id,
        "createdBy": group.created_by,
        "createdAt": api_timestamp(group.created_at),
        "scimId": group.scim_id,
        "users": sorted(user_ids),
    }


def record_member_added(group_id: int, user_id: int, *, actor: Actor) -> None:
    """`group-user-added`, for a writer of one membership (by hand in the admin, or by SAML
    sign-in); a group's own writes list its members in `group-updated` instead."""
    record_event("group-user-added", actor=actor, data={"groupId": group_id, "userId": user_id})


def record_member_removed(group_id: int, user_id: int, *, actor: Actor) -> None:
    """`group-user-removed`, the membership as pre-data (see `record_member_added`)."""
    record_event(
        "group-user-removed", actor=actor, pre_data={"groupId": group_id, "userId": user_id}
    )


# --- writing -------------------------------------------------------------------------------


def _locked(group_id: int, *, for_delete: bool = False) -> Group:
    """The group `group_id` names, read and locked until the transaction ends (PostgreSQL), so
    two concurrent writes of one group do not interleave; SQLite's IMMEDIATE transactions
    already serialise writers. 404 when there is none.

    FOR NO KEY UPDATE, as an UPDATE of the group's row locks it: it does not block the
    key-share locks of foreign-key checks, which Django defers to commit (FOR UPDATE once
    deadlocked with a grant's, before every writer of members took the members' lock first).

    `for_delete`: FOR UPDATE. Taken in a write of members (`flagadmin.core.locks.members_write`),
    as every writer of members is: nothing refers anew to the group until the delete
    commits."""
    locks = Group.objects.select_for_update(no_key=not for_delete)
    locked = locks.filter(pk=group_id).first()
    if locked is None:
        raise NotFoundError(GROUP_NOT_FOUND)
    return locked


def _require_id(group_id: int | None) -> int:
    """404 at once for an id no group can have (`id_from_path`: `abc`, `0`, beyond 64 bits):
    no query, and no wait for SQLite's write lock, which a transaction takes when it starts."""
    if group_id is None:
        raise NotFoundError(GROUP_NOT_FOUND)
    return group_id


def _name_taken_error(group: Group) -> NameExistsError | None:
    """409 when another group has the name `group` has (or is about to have)."""
    if Group.objects.filter(name=group.name).exclude(pk=group.pk).exists():
        return NameExistsError(GROUP_NAME_EXISTS)
    return None


def _save_unique_name(group: Group, **save_kwargs: Any) -> None:
    """Saves; a concurrent request that took the name first is the same 409 as the pre-check."""
    with unique_or_conflict(lambda: _name_taken_error(group)):
        group.save(**save_kwargs)


def create_group(
    *,
    actor: Actor,
    name: str,
    description: str | None,
    mappings_sso: Sequence[str],
    root_role: Role | None,
    users: Sequence[User],
) -> Group:
    """Creates a group with its members; audit event `group-created`."""
    actor_name = audit_identity(actor).name
    with members_write() as members:
        # One deleted since the request was checked is left out, as its delete removes
        # memberships.
        present = members.hold(User, [user.pk for user in users])
        users = [user for user in users if user.pk in present]
        group = Group(
            name=name,
            description=description,
            mappings_sso=list(mappings_sso),
            root_role=root_role,
            created_by=actor_name,
        )
        if error := _name_taken_error(group):
            raise error
        _save_unique_name(group)
        now = timezone.now()
        GroupMembership.objects.bulk_create(
            GroupMembership(group=group, user=user, joined_at=now, created_by=actor_name)
            for user in users
        )
        record_event(
            "group-created", actor=actor, data=group_snapshot(group, [u.pk for u in users])
        )
    return group


def _check_scim_rules(group: Group, *, name: str, user_ids: Sequence[int], member_ids: Any) -> None:
    """SCIM owns the name and the members of the groups it manages (400 naming each)."""
    refused = []
    if name != group.name:
        refused.append(("name", "its name"))
    if set(user_ids) != set(member_ids):
        refused.append(("users", "its members"))
    if refused:
        raise InvalidInputError(
            *(
                Problem.of(
                    [field], f"cannot be changed: the group is managed by SCIM, which owns {what}"
                )
                for field, what in refused
            )
        )


def update_group(
    *,
    actor: Actor,
    group_id: int | None,
    name: str,
    description: str | None,
    mappings_sso: Sequence[str],
    root_role: Role | None,
    users: Sequence[User],
) -> Group:
    """Replaces every detail and the members of group `group_id` (404 when there is none), all
    or nothing.

    Members who stay keep their `joinedAt` and `createdBy` (and whether SSO added them); new
    members join now, added by the actor; the others leave. A SCIM-managed group keeps its
    name and members. One `group-updated` event with the state before and after, none when
    nothing changed.
    """
    group_id = _require_id(group_id)
    actor_name = audit_identity(actor).name
    with members_write() as members:
        # The group, then the people wanted; one deleted since the request was checked is left
        # out.
        group = _locked(group_id)
        wanted_ids = list(dict.fromkeys(user.pk for user in users))
        present = members.hold(User, wanted_ids)
        wanted_ids = [uid for uid in wanted_ids if uid in present]
        memberships = {m.user_id: m for m in group.memberships.all()}
        pre_data = group_snapshot(group, list(memberships))

        if group.scim_id:
            _check_scim_rules(group, name=name, user_ids=wanted_ids, member_ids=memberships)

        if name != group.name and Group.objects.filter(name=name).exclude(pk=group.pk).exists():
            raise NameExistsError(GROUP_NAME_EXISTS)

        _apply_details(
            group,
            name=name,
            description=description,
            mappings_sso=mappings_sso,
            root_role=root_role,
        )
        _replace_members(group, memberships, wanted_ids, added_by=actor_name)
        record_event(
            "group-updated",
            actor=actor,
            data=group_snapshot(group, wanted_ids),
            pre_data=pre_data,
        )
    return group


def _apply_details(
    group: Group,
    *,
    name: str,
    description: str | None,
    mappings_sso: Sequence[str],
    root_role: Role | None,
) -> None:
    """Writes the group's own columns, only those that change."""
    new_values = {
        "name": name,
        "description": description,
        "mappings_sso": list(mappings_sso),
        "root_role_id": root_role.pk if root_role else None,
    }
    changed = [field for field, value in new_values.items() if getattr(group, field) != value]
    for field in changed:
        setattr(group, field, new_values[field])
    if "name" in changed:
        _save_unique_name(group, update_fields=changed)
    elif changed:
        # No name to race for: no savepoint (two round trips) around the write.
        group.save(update_fields=changed)


def _replace_members(
    group: Group,
    memberships: dict[int, GroupMembership],
    wanted_ids: Sequence[int],
    *,
    added_by: str,
) -> None:
    """Makes `wanted_ids` the members: those who stay keep their row (joinedAt, createdBy)."""
    wanted = set(wanted_ids)
    leaving = [m.pk for uid, m in memberships.items() if uid not in wanted]
    if leaving:
        GroupMembership.objects.filter(pk__in=leaving).delete()
    now = timezone.now()
    GroupMembership.objects.bulk_create(
        GroupMembership(group=group, user_id=uid, joined_at=now, created_by=added_by)
        for uid in wanted_ids
        if uid not in memberships
    )


def delete_group(*, actor: Actor, group_id: int | None) -> None:
    """Deletes group `group_id` (404 when there is none), its memberships and its project roles;
    audit event `group-deleted`."""
    group_id = _require_id(group_id)
    with members_write():
        group = _locked(group_id, for_delete=True)
        pre_data = group_snapshot(group, list(group.memberships.values_list("user_id", flat=True)))
        group.delete()
        record_event("group-deleted", actor=actor, pre_data=pre_data)
