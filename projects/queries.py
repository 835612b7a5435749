"""The read model of GET /api/admin/projects: every project with its computed figures.

Everything is computed from the rows as they are when the request is served: no stored health,
no hourly job. Computing takes a constant number of SQL statements whatever the number of
projects and flags:

1. the projects with their figures, one correlated subquery per figure, each answered by an
   index range scan or probe per project (`_projects_sql` names the indexes);
2. the Owner role assignments of those projects (users, then groups, by assignment time);
3. for a caller that is a user, the projects that user marked as favorite (per request).

The SQL is written by hand, in the dialect SQLite and PostgreSQL share. The ORM expression of
the same statement (seven `Subquery` annotations) takes about 4.5 ms to compile on every
request here, more than the whole time budget of this endpoint for a small instance; this text
is built once per process. Table names come from the models; the flags' table is found through
the app registry because this app must not import `features` (which imports `projects`).

On PostgreSQL the computed list is reused while it is provably what a new computation would
give (`projects_page`): the same database snapshot (no transaction has committed anywhere since)
and no flag has crossed its potentially-stale age in between. Any committed write invalidates
it, so the figures are never stale; a repeated read of an unchanged instance costs one tiny
query instead of a scan of every flag.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache, cached_property
from itertools import groupby
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from flagadmin.models import AuditEvent, Role, RoleType, User
from groups.models import Group, GroupMembership
from projects.models import (
    FavoriteProject,
    Project,
    ProjectEnvironment,
    ProjectRoleAssignment,
)

# How long a flag of each type is expected to live: an older flag that is not stale is
# "potentially stale". Types not listed (kill-switch, permission) never are. Defined here, the
# one place, because this app computes health and cannot import `features` (which can read it).
POTENTIALLY_STALE_AFTER: dict[str, timedelta] = {
    "release": timedelta(days=40),
    "experiment": timedelta(days=40),
    "operational": timedelta(days=7),
}

# Project roles count towards members. Root roles never sit in project assignments (the API
# refuses them), but a row pointing at one, made by hand, must not count either.
PROJECT_ROLE_TYPES = (RoleType.PROJECT.value, RoleType.CUSTOM.value)

SYSTEM_OWNER: dict[str, str] = {"ownerType": "system"}

SCOPES = {
    "active": "p.archived_at IS NULL",
    "archived": "p.archived_at IS NOT NULL",
    "one": "p.id = %(project)s",
}


def health(feature_count: int, stale: int, potentially_stale: int) -> int:
    """round(100 - stale% - potentially stale%) over the non-archived flags; 100 with none.
    Rounded half up (as JavaScript's Math.round), in integers so that no float error decides."""
    if feature_count <= 0:
        return 100
    healthy = feature_count - stale - potentially_stale
    # 100 * healthy / count rounded half up = floor((200 * healthy + count) / (2 * count)).
    return max(0, min(100, (200 * healthy + feature_count) // (2 * feature_count)))


def _lifetime_groups() -> list[tuple[timedelta, tuple[str, ...]]]:
    """The flag types grouped by lifetime: each group is one index range per project."""
    ordered = sorted(POTENTIALLY_STALE_AFTER.items(), key=lambda item: (item[1], item[0]))
    return [
        (lifetime, tuple(name for name, _ in types))
        for lifetime, types in groupby(ordered, key=lambda item: item[1])
    ]


@cache
def _projects_sql(scope: str, with_boundaries: bool) -> str:
    """The main statement, built once per process and shape. Each figure is a correlated
    subquery answered from an index:

    - counts of flags: `feature_project_state` (project, archived_at, stale, type,
      created_at): index-only range scans;
    - members: `project_role_project_role` (project, role), then the unique (group, user)
      index of group memberships;
    - lastUpdatedAt: `audit_flag_event_newest` (on AuditEvent: project, created_at DESC) over
      events with a flag name, walked newest first until an event about a flag that is in the
      project (a primary-key probe); the first one nearly always is. `OFFSET 0` keeps
      PostgreSQL from turning that check into a join over all of the project's events;
    - lastReportedFlagUsage: `feature_last_seen` (project, last_seen_at DESC): one probe;
    - with_boundaries: per lifetime group, the oldest flag that is not potentially stale yet
      (a range start in `feature_project_state`), which tells how long the result holds.

    Parameters are named (`%(name)s`); `_params` gives their values.
    """
    feature = apps.get_model("features", "Feature")._meta.db_table
    project = Project._meta.db_table
    assignment = ProjectRoleAssignment._meta.db_table
    role = Role._meta.db_table
    membership = GroupMembership._meta.db_table
    event = AuditEvent._meta.db_table

    def young_or_old(group: int, types: tuple[str, ...], select: str, cutoff: str) -> str:
        names = ", ".join(f"%(type_{group}_{index})s" for index in range(len(types)))
        return (
            f"(SELECT {select} FROM {feature} f WHERE f.project_id = p.id"
            f" AND f.archived_at IS NULL AND f.stale = %(false)s AND f.type IN ({names})"
            f" AND f.created_at {cutoff} %(cutoff_{group})s)"
        )

    groups = _lifetime_groups()
    potentially_stale = " + ".join(
        young_or_old(group, types, "COUNT(*)", "<") for group, (_, types) in enumerate(groups)
    )
    boundaries = "".join(
        f",\n       {young_or_old(group, types, 'MIN(f.created_at)', '>=')} AS young_{group}"
        for group, (_, types) in enumerate(groups)
        if with_boundaries
    )
    return f"""
SELECT p.id, p.name, p.description, p.mode, p.default_stickiness,
       p.created_at, p.updated_at, p.archived_at,
       (SELECT COUNT(*) FROM {feature} f
         WHERE f.project_id = p.id AND f.archived_at IS NULL) AS feature_count,
       (SELECT COUNT(*) FROM {feature} f
         WHERE f.project_id = p.id AND f.archived_at IS NULL AND f.stale = %(true)s)
         AS stale_count,
       ({potentially_stale or "0"}) AS potentially_stale_count,
       (SELECT COUNT(DISTINCT COALESCE(gm.user_id, a.user_id)) FROM {assignment} a
          JOIN {role} r ON r.id = a.role_id
          LEFT JOIN {membership} gm ON gm.group_id = a.group_id
         WHERE a.project_id = p.id AND r.type IN (%(project_role)s, %(custom_role)s))
         AS member_count,
       (SELECT e.created_at FROM {event} e
         WHERE e.project = p.id AND e.feature_name IS NOT NULL
           AND EXISTS (SELECT 1 FROM {feature} f
                        WHERE f.name = e.feature_name AND f.project_id = e.project
                        LIMIT 1 OFFSET 0)
         ORDER BY e.created_at DESC LIMIT 1) AS last_updated_at,
       (SELECT MAX(f.last_seen_at) FROM {feature} f
         WHERE f.project_id = p.id AND f.last_seen_at IS NOT NULL)
         AS last_reported_flag_usage{boundaries}
  FROM {project} p
 WHERE {SCOPES[scope]}
"""


def _params(now: datetime, project_id: str | None) -> dict[str, Any]:
    """The values of the named parameters of `_projects_sql`."""
    params: dict[str, Any] = {
        "true": True,
        "false": False,
        "project_role": PROJECT_ROLE_TYPES[0],
        "custom_role": PROJECT_ROLE_TYPES[1],
        "project": project_id,
        "owner": Role.OWNER,
    }
    for group, (lifetime, types) in enumerate(_lifetime_groups()):
        params[f"cutoff_{group}"] = connection.ops.adapt_datetimefield_value(now - lifetime)
        for index, name in enumerate(types):
            params[f"type_{group}_{index}"] = name
    return params


def _as_datetime(value: Any) -> datetime | None:
    """Datetimes as the drivers hand them back: PostgreSQL gives aware ones; SQLite gives
    naive UTC ones for plain columns and text for computed ones (`MAX(...)`)."""
    if value is None or (isinstance(value, datetime) and value.tzinfo is not None):
        return value
    if isinstance(value, str):
        value = parse_datetime(value)
    return value.replace(tzinfo=UTC)


def _iso(value: Any) -> str | None:
    """ISO 8601 in UTC with a `Z`, as DRF's DateTimeField writes datetimes elsewhere."""
    moment = _as_datetime(value)
    if moment is None:
        return None
    text = moment.isoformat()
    if not text.endswith("+00:00"):
        text = moment.astimezone(UTC).isoformat()
    return text[:-6] + "Z"


@cache
def _owners_sql(scope: str) -> str:
    """Owner role assignments of the projects of `scope`: users before groups, each by
    assignment time, then id. Reached from the projects through `project_role_project_role`
    (project, role)."""
    project = Project._meta.db_table
    assignment = ProjectRoleAssignment._meta.db_table
    user = User._meta.db_table
    group = Group._meta.db_table
    return f"""
SELECT a.project_id, a.user_id, u.name, u.username, u.email, u.image_url, g.name
  FROM {project} p
  JOIN {assignment} a ON a.project_id = p.id AND a.role_id = %(owner)s
  LEFT JOIN {user} u ON u.id = a.user_id
  LEFT JOIN {group} g ON g.id = a.group_id
 WHERE {SCOPES[scope]}
 ORDER BY CASE WHEN a.user_id IS NULL THEN 1 ELSE 0 END, a.created_at, a.id
"""


def _fetch(scope: str, with_boundaries: bool, params: dict[str, Any]) -> tuple[list, list]:
    """The rows of the projects statement and of the owners statement."""
    statements = (_projects_sql(scope, with_boundaries), _owners_sql(scope))
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            results = []
            for sql in statements:
                cursor.execute(sql, params)
                results.append(cursor.fetchall())
            return results[0], results[1]
    # savepoint=False: a transaction of its own, or none more inside the caller's.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        # The planner estimates the projects statement above jit_above_cost from ~1,400
        # projects, and JIT compilation then adds 100-200 ms to a statement that runs in less.
        # Off for this transaction only.
        cursor.execute("SET LOCAL jit = off")
        # psycopg's own (C) timestamp loader: Django installs a Python subclass of it that
        # costs ~15 µs per value, a third of the time of the whole projects statement.
        from psycopg.types.datetime import TimestamptzLoader

        cursor.cursor.adapters.register_loader("timestamptz", TimestamptzLoader)
        results = []
        for sql in statements:
            cursor.execute(sql, params)
            results.append(cursor.fetchall())
        return results[0], results[1]


def _owners(rows: list[tuple]) -> dict[str, list[dict]]:
    """Owner entries per project, in the order of the rows."""
    owners: dict[str, list[dict]] = {}
    for project_id, user_id, name, username, email, image_url, group_name in rows:
        owners.setdefault(project_id, []).append(
            {
                "ownerType": "user",
                "name": name or username or email or "unknown",
                "email": email or None,
                "imageUrl": image_url or None,
            }
            if user_id is not None
            else {"ownerType": "group", "name": group_name}
        )
    return owners


def compute_projects(
    *, scope: str, now: datetime, project_id: str | None = None, with_boundaries: bool = False
) -> tuple[list[dict[str, Any]], datetime | None]:
    """The projects of `scope` ("active", "archived", or "one" with `project_id`) as the API
    shows them without `favorite`, ordered by name case-insensitively, then id; and, with
    `with_boundaries`, the first moment after `now` at which a flag becomes potentially stale
    (None: none will)."""
    rows, owner_rows = _fetch(scope, with_boundaries, _params(now, project_id))
    if not rows:
        return [], None
    owners = _owners(owner_rows)
    # The order is decided here, not by the database: SQLite's lower() folds only ASCII and
    # PostgreSQL's follows the database's locale, while str.casefold is full Unicode case
    # folding, and comparing the folded strings goes by code point everywhere.
    rows.sort(key=lambda row: (row[1].casefold(), row[0]))
    projects = []
    crossings: list[datetime] = []
    lifetimes = [lifetime for lifetime, _ in _lifetime_groups()]
    for row in rows:
        (pid, name, description, mode, stickiness, created_at, updated_at, archived_at) = row[:8]
        (features, stale, potentially_stale, members, last_updated, last_seen) = row[8:14]
        for lifetime, youngest in zip(lifetimes, row[14:], strict=False):
            if youngest is not None:
                crossings.append(_as_datetime(youngest) + lifetime)
        projects.append(
            {
                "id": pid,
                "name": name,
                "description": description,
                "health": health(features, stale, potentially_stale),
                "featureCount": features,
                "staleFeatureCount": stale,
                "potentiallyStaleFeatureCount": potentially_stale,
                "memberCount": members,
                "mode": mode,
                "defaultStickiness": stickiness,
                "createdAt": _iso(created_at),
                "updatedAt": _iso(updated_at),
                "lastUpdatedAt": _iso(last_updated),
                "archivedAt": _iso(archived_at),
                "lastReportedFlagUsage": _iso(last_seen),
                "owners": owners.get(pid) or [dict(SYSTEM_OWNER)],
            }
        )
    return projects, min(crossings, default=None)


def favorite_project_ids(user_id: int | None) -> set[str]:
    """The projects the user marked as favorite; none for callers that are not users."""
    if user_id is None:
        return set()
    return set(FavoriteProject.objects.filter(user_id=user_id).values_list("project_id", flat=True))


# --- the list, reused while the database is unchanged --------------------------------------


@dataclass(frozen=True)
class ProjectsPage:
    """The computed list, each project already encoded as JSON without its `favorite`."""

    encoded: tuple[tuple[str, bytes], ...]  # (project id, `"key":value,...}` without the `{`)
    valid_until: datetime | None  # a flag becomes potentially stale then

    def render(self, favorites: set[str]) -> bytes:
        """The response body `{"version":1,"projects":[...]}` for a caller's favorites."""
        if not favorites:
            return self.without_favorites
        return self._render(favorites)

    @cached_property
    def without_favorites(self) -> bytes:
        """The body for callers without favorites (tokens, most users): built once."""
        return self._render(set())

    def _render(self, favorites: set[str]) -> bytes:
        parts = [
            (b'{"favorite":true,' if pid in favorites else b'{"favorite":false,') + rest
            for pid, rest in self.encoded
        ]
        return b'{"version":1,"projects":[' + b",".join(parts) + b"]}"


def encode(project: dict[str, Any]) -> bytes:
    """JSON as DRF's renderer writes it (compact, UTF-8, not ASCII-escaped)."""
    return json.dumps(project, ensure_ascii=False, separators=(",", ":")).encode()


_reused: dict[tuple[str, str, str], tuple[str, ProjectsPage]] = {}
_reused_lock = threading.Lock()


def _database_state() -> str | None:
    """A value that changes whenever any transaction commits (or aborts) in the database
    server: PostgreSQL's current snapshot (xmin:xmax:in-progress ids). None where a computed
    list must not be reused: not PostgreSQL, reuse turned off, or inside a transaction (whose
    own uncommitted writes the snapshot does not show)."""
    if (
        connection.vendor != "postgresql"
        or connection.in_atomic_block
        or not settings.PROJECTS_LIST_REUSE
    ):
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_snapshot()::text")
        return cursor.fetchone()[0]


def projects_page(*, archived: bool) -> ProjectsPage:
    """The active or archived projects, computed now or reused when provably identical."""
    scope = "archived" if archived else "active"
    state = _database_state()
    key = (connection.alias, str(connection.settings_dict["NAME"]), scope)
    now = timezone.now()
    if state is not None:
        kept = _reused.get(key)
        # Same snapshot: no transaction committed since the list was computed (which was
        # after that snapshot was taken), so the rows are the same; before `valid_until` no
        # flag has changed its potentially stale state either.
        if kept is not None and kept[0] == state:
            page = kept[1]
            if page.valid_until is None or now < page.valid_until:
                return page
    projects, valid_until = compute_projects(
        scope=scope, now=now, with_boundaries=state is not None
    )
    page = ProjectsPage(
        encoded=tuple((p["id"], encode(p)[1:]) for p in projects), valid_until=valid_until
    )
    if state is not None:
        with _reused_lock:
            _reused[key] = (state, page)
    return page


def project_detail(project_id: str, *, user_id: int | None) -> dict[str, Any] | None:
    """One project (archived or not) as the list shows it, with the environments enabled in
    it; None when there is no such project."""
    projects, _ = compute_projects(scope="one", now=timezone.now(), project_id=project_id)
    if not projects:
        return None
    environments = list(
        ProjectEnvironment.objects.filter(project_id=project_id)
        .order_by("environment__sort_order", "environment__name")
        .values_list("environment_id", flat=True)
    )
    return {
        "favorite": project_id in favorite_project_ids(user_id),
        **projects[0],
        "environments": environments,
    }


def project_access(project_id: str) -> dict[str, Any]:
    """Who holds which project role in the project: users and groups, by id."""
    users: dict[int, list[int]] = {}
    groups: dict[int, list[int]] = {}
    rows = (
        ProjectRoleAssignment.objects.filter(project_id=project_id)
        .order_by("role_id", "id")
        .values_list("role_id", "user_id", "group_id")
    )
    for role_id, user_id, group_id in rows:
        if user_id is not None:
            users.setdefault(user_id, []).append(role_id)
        else:
            groups.setdefault(group_id, []).append(role_id)
    return {
        "project": project_id,
        "users": [{"id": key, "roles": roles} for key, roles in sorted(users.items())],
        "groups": [{"id": key, "roles": roles} for key, roles in sorted(groups.items())],
    }
