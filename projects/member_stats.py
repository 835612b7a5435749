"""The project members the database keeps (`ProjectMember`, `ProjectMemberCount`, kept by the
triggers of `flagadmin.core.derived.members`) against the rows they summarise: role assignments,
group memberships and role types. To check them (tests, benchmarks) and to repair them (`manage.py
repairprojectstats`), for example after rows were written with the triggers off."""

from __future__ import annotations

from collections import Counter

from flagadmin.core.locks import members_write
from flagadmin.core.models import Role
from flagadmin.core.recount import differing
from flagadmin.core.sql import lock_tables_against_writes
from groups.models import GroupMembership
from projects.models import ProjectMember, ProjectMemberCount, ProjectRoleAssignment
from projects.selectors import PROJECT_ROLE_TYPES

MemberKey = tuple[str, int]  # (project id, user id)


def recounted_paths() -> dict[MemberKey, int]:
    """Each member's paths into each project, from the assignments of project roles: one per
    assignment of their own, one per assignment of each of their groups."""
    counting = ProjectRoleAssignment.objects.filter(role__type__in=PROJECT_ROLE_TYPES)
    paths: Counter[MemberKey] = Counter()
    for project, user in counting.filter(user__isnull=False).values_list("project_id", "user_id"):
        paths[(project, user)] += 1
    members_of: dict[int, list[int]] = {}
    for group, user in GroupMembership.objects.values_list("group_id", "user_id"):
        members_of.setdefault(group, []).append(user)
    for project, group in counting.filter(group__isnull=False).values_list(
        "project_id", "group_id"
    ):
        for user in members_of.get(group, ()):
            paths[(project, user)] += 1
    return dict(paths)


def stored_paths() -> dict[MemberKey, int]:
    return {
        (project, user): paths
        for project, user, paths in ProjectMember.objects.values_list(
            "project_id", "user_id", "paths"
        )
    }


def recounted_totals() -> dict[str, int]:
    """Members per project (projects without members left out)."""
    return dict(Counter(project for project, _ in recounted_paths()))


def stored_totals() -> dict[str, int]:
    """The stored member counts, without the zeros (a count row stays when its members go)."""
    return dict(ProjectMemberCount.objects.exclude(total=0).values_list("project_id", "total"))


def repair() -> tuple[dict[MemberKey, tuple[int, int]], dict[str, tuple[int, int]]]:
    """Make the stored members and counts equal to a recomputation; returns those that were
    wrong, as (stored, recomputed). Writers of assignments, memberships and roles wait
    meanwhile (PostgreSQL: SHARE locks; SQLite: the write lock)."""
    # The members' lock first, as every writer of members takes it before touching these
    # tables: then no writer holds one of them waiting for it.
    with members_write():
        lock_tables_against_writes(ProjectRoleAssignment, GroupMembership, Role)
        actual, kept = recounted_paths(), stored_paths()
        wrong_paths = differing(actual, kept)
        for (project, user), (_, paths) in wrong_paths.items():
            if paths:
                ProjectMember.objects.update_or_create(
                    project_id=project, user_id=user, defaults={"paths": paths}
                )
            else:
                ProjectMember.objects.filter(project_id=project, user_id=user).delete()
        actual_totals, kept_totals = recounted_totals(), stored_totals()
        wrong_totals = differing(actual_totals, kept_totals)
        for project, (_, total) in wrong_totals.items():
            ProjectMemberCount.objects.update_or_create(
                project_id=project, defaults={"total": total}
            )
    return wrong_paths, wrong_totals
