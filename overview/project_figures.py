"""The read model of projects: each project with its figures, as the project endpoints show it
and as the Django admin lists projects (one implementation for both).

Most figures are about flags: this module reads `features` and `projects` (both below it),
which never import it. Everything is read from the rows as they are when the request
is served, in a constant number of statements whatever the number of projects and flags:

1. the projects with their figures (`_figures_sql`), each source read once, none by counting
   flags:
   - featureCount, staleFeatureCount: `ProjectFlagCount`, a few rows per project, which the
     database keeps exact in the transaction of every write of a flag (`flagadmin.core.derived`);
   - potentiallyStaleFeatureCount: it depends on the time as well as on the rows, so it is not
     stored: the counted non-stale flags of each type that has a lifetime, minus those still
     younger than it, found in one range scan of `feature_fresh` per lifetime (the flags of
     the last 7 or 40 days);
   - memberCount: `ProjectMemberCount`, one row per project, which the database keeps in the
     transaction of every change of a role assignment, group membership or role type
     (`flagadmin.core.derived`);
   - lastUpdatedAt and lastReportedFlagUsage: `ProjectFlagActivity`, one row per project,
     which the database keeps in the transaction of every write of a flag or an audit event
     (`flagadmin.core.derived`);
2. the owners (`projects.selectors.owner_entries`);
3. for a caller that is a user, the projects that user marked as favorite.

On PostgreSQL the statements of one response run in one REPEATABLE READ, READ ONLY transaction,
so that a response never mixes two snapshots. The SQL is written by hand in the dialect SQLite
and PostgreSQL share (the ORM's compilation of the same statement costs milliseconds per
request); table and column names come from the models, and the text is built once per process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from functools import cache, lru_cache
from itertools import groupby
from time import monotonic
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils.dateparse import parse_datetime

from features.models import (
    Feature,
    FeatureType,
    ProjectFlagActivity,
    ProjectFlagCount,
    ProjectFlagDay,
)
from flagadmin.api.renderers import encode_json
from flagadmin.core import times
from flagadmin.core.caches import BoundedCache
from flagadmin.core.coalesce import Coalescer
from flagadmin.core.db import in_callers_transaction, prepared_cursor_on, read_snapshot
from flagadmin.core.sql import column, table
from projects.models import (
    OWNER_NAMES,
    FavoriteProject,
    Project,
    ProjectEnvironment,
    ProjectListVersion,
    ProjectMemberCount,
)
from projects.selectors import owner_entries, owners_by_project, owners_sql

SCOPES = {
    "active": "p.{archived_at} IS NULL",
    "archived": "p.{archived_at} IS NOT NULL",
    "one": "p.{id} = %(project)s",
}


def health(feature_count: int, stale: int, potentially_stale: int) -> int:
    """round(100 - stale% - potentially stale%) over the non-archived flags; 100 with none.
    Rounded half up (as JavaScript's Math.round), in integers so that no float error decides."""
    if feature_count <= 0:
        return 100
    healthy = feature_count - stale - potentially_stale
    # 100 * healthy / count rounded half up = floor((200 * healthy + count) / (2 * count)).
    return max(0, min(100, (200 * healthy + feature_count) // (2 * feature_count)))


@cache
def lifetime_groups() -> tuple[tuple[timedelta, tuple[str, ...]], ...]:
    """The flag types that have a lifetime, grouped by it (shortest first). Constants of the
    code: worked out once per process."""
    typed = sorted(
        (kind.expected_lifetime, kind.value)
        for kind in FeatureType
        if kind.expected_lifetime is not None
    )
    return tuple(
        (lifetime, tuple(name for _, name in types))
        for lifetime, types in groupby(typed, key=lambda item: item[0])
    )


def scope_condition(scope: str, ids: int = 0) -> str:
    """The WHERE condition on projects `p` of a scope; "ids": the `ids` projects
    `%(id_0)s`, `%(id_1)s`, ..."""
    names = {"id": column(Project, "id"), "archived_at": column(Project, "archived_at")}
    if scope == "ids":
        placeholders = ", ".join(f"%(id_{index})s" for index in range(ids)) or "NULL"
        return f"p.{names['id']} IN ({placeholders})"
    return SCOPES[scope].format(**names)


def literal(value: str) -> str:
    """`value` as an SQL string literal. Only for constants of this code (type names, role
    types), never for what a client sent: those go as parameters."""
    return "'" + value.replace("'", "''") + "'"


def _cutoff(vendor: str, group: int, lifetime: timedelta) -> str:
    """The SQL for "now minus the lifetime of group `group`". On PostgreSQL the transaction's
    own clock, so that the statement has no parameter and its plan is prepared once per
    connection (the planner still estimates the range with the current time, and executes it
    with the time of each transaction); on SQLite a parameter from `_params`."""
    if vendor == "postgresql":
        return f"CURRENT_TIMESTAMP - INTERVAL '{int(lifetime.total_seconds())} seconds'"
    return f"%(cutoff_{group})s"


def _cutoff_day(vendor: str, group: int, lifetime: timedelta) -> tuple[str, str]:
    """The SQL for the day (UTC) of `_cutoff`, and for the end of that day."""
    if vendor == "postgresql":
        day = f"CAST(({_cutoff(vendor, group, lifetime)}) AT TIME ZONE 'UTC' AS DATE)"
        return day, f"CAST({day} + 1 AS TIMESTAMP) AT TIME ZONE 'UTC'"
    return f"%(cutoff_day_{group})s", f"%(cutoff_day_end_{group})s"


def _young_flags(vendor: str, group: int, types: Sequence[str], *extra: str) -> str:
    """The condition on flags `f` that are neither archived nor stale, of one of `types`,
    younger than the lifetime of group `group`, and matching `extra`."""
    type_column = f"f.{column(Feature, 'type')}"
    cutoff = _cutoff(vendor, group, lifetime_groups()[group][0])
    return " AND ".join(
        (
            f"f.{column(Feature, 'archived_at')} IS NULL",
            f"f.{column(Feature, 'stale')} = FALSE",
            f"{type_column} = {literal(types[0])}"
            if len(types) == 1
            else f"{type_column} IN ({', '.join(literal(name) for name in types)})",
            f"f.{column(Feature, 'created_at')} >= {cutoff}",
            *extra,
        )
    )


@cache
def _fresh_joins(vendor: str) -> str:
    """Per lifetime group g, `fresh_g`: each project's young flags of the group (`young`) and
    the oldest one's creation time (`first`), from one range scan of `feature_fresh` (type,
    created_at) over the last 7 or 40 days."""
    project, created_at = column(Feature, "project"), column(Feature, "created_at")
    return "".join(
        f"""
  LEFT JOIN (SELECT f.{project} AS project_id, COUNT(*) AS young, MIN(f.{created_at}) AS first
               FROM {table(Feature)} f
              WHERE {_young_flags(vendor, g, types)}
              GROUP BY f.{project}) fresh_{g} ON fresh_{g}.project_id = p.{column(Project, "id")}"""
        for g, (_, types) in enumerate(lifetime_groups())
    )


@cache
def _young_per_project(vendor: str) -> tuple[list[str], list[str]]:
    """Per lifetime group, two expressions on project `p`: how many young flags it has, and
    the oldest one's creation time. Per type (so that each reads one range of an index,
    whatever the planner estimates): the count sums the project's `ProjectFlagDay` rows after
    the cutoff's day and counts the flags of that day after the cutoff, in the
    `feature_project_state` index (project, archived, stale, type, created_at); the oldest is
    the first entry of that index after the cutoff."""
    days, feature = table(ProjectFlagDay), table(Feature)
    project_id = f"p.{column(Project, 'id')}"
    of_project = f"f.{column(Feature, 'project')} = {project_id}"
    created_at = f"f.{column(Feature, 'created_at')}"

    # The index's own order: the same as by creation time alone where every other column is
    # fixed, but PostgreSQL does not take `archived_at IS NULL` as fixing a column, and would
    # sort every young flag to find the first.
    index_order = ", ".join(
        f"f.{column(Feature, field)}"
        for field in ("project", "archived_at", "stale", "type", "created_at")
    )

    def day_column(field: str) -> str:
        return f"d.{column(ProjectFlagDay, field)}"

    young, first = [], []
    for group, (lifetime, types) in enumerate(lifetime_groups()):
        day, day_end = _cutoff_day(vendor, group, lifetime)
        counts, firsts = [], []
        for name in types:
            counts.append(
                f"COALESCE((SELECT SUM({day_column('total')}) FROM {days} d"
                f" WHERE {day_column('project')} = {project_id}"
                f" AND {day_column('type')} = {literal(name)} AND {day_column('day')} > {day}), 0)"
            )
            counts.append(
                f"(SELECT COUNT(*) FROM {feature} f WHERE "
                + _young_flags(vendor, group, (name,), of_project, f"{created_at} < {day_end}")
                + ")"
            )
            firsts.append(
                f"SELECT {created_at} FROM {feature} f WHERE "
                + _young_flags(vendor, group, (name,), of_project)
                + f" ORDER BY {index_order} LIMIT 1"
            )
        young.append(" + ".join(counts))
        first.append(
            firsts[0]
            if len(firsts) == 1
            else "SELECT MIN(t.first) FROM ("
            + " UNION ALL ".join(f"SELECT ({query}) AS first" for query in firsts)
            + ") t"
        )
    return young, first


@dataclass(frozen=True, slots=True)
class FigureColumn:
    """A column of the figures' statement: its name (its alias in the statement, and how every
    reader takes it from a row), and whether it is a time (SQLite's driver gives those naive,
    or as text)."""

    name: str
    time: bool = False


# The figures' statement's columns, in the order of its SELECT list, which `_figures_sql`
# writes from this declaration (each expression found by name); with `aging`, the
# `AGING_COLUMNS` follow. Rows are read through `COLUMN`, never by a written-out position.
FIGURE_COLUMNS = (
    FigureColumn("id"),
    FigureColumn("name"),
    FigureColumn("description"),
    FigureColumn("mode"),
    FigureColumn("default_stickiness"),
    FigureColumn("created_at", time=True),
    FigureColumn("updated_at", time=True),
    FigureColumn("archived_at", time=True),
    FigureColumn("feature_count"),
    FigureColumn("stale_count"),
    FigureColumn("potentially_stale_count"),
    FigureColumn("member_count"),
    FigureColumn("last_flag_event_at", time=True),
    FigureColumn("last_flag_seen_at", time=True),
)
# Per lifetime group, the creation time of the project's oldest young flag of the group.
AGING_COLUMNS = tuple(
    FigureColumn(f"oldest_young_{group}", time=True) for group in range(len(lifetime_groups()))
)
# A column's name -> its index in the statement's rows.
COLUMN = {figure.name: index for index, figure in enumerate(FIGURE_COLUMNS + AGING_COLUMNS)}
# The time columns' indexes (`_aware`), and the aging columns' (`_computed`).
TIME_COLUMNS = tuple(
    COLUMN[figure.name] for figure in FIGURE_COLUMNS + AGING_COLUMNS if figure.time
)
AGING = slice(len(FIGURE_COLUMNS), None)
# The two columns every row is looked up by.
_ID, _NAME = COLUMN["id"], COLUMN["name"]


def _select_list(expressions: dict[str, str], aging: bool) -> str:
    """The SELECT list of the figures' statement: each declared column's expression, in the
    declared order, under the column's name."""
    columns = FIGURE_COLUMNS + (AGING_COLUMNS if aging else ())
    if expressions.keys() != {figure.name for figure in columns}:
        raise ValueError(f"expressions for {sorted(expressions)}, columns {columns}")
    return ",\n       ".join(f'{expressions[figure.name]} AS "{figure.name}"' for figure in columns)


@lru_cache(maxsize=128)
def _figures_sql(condition: str, vendor: str, aging: bool = False, few: bool = False) -> str:
    """The projects matching `condition` with their figures (see the module's docstring), in
    `vendor`'s dialect; with `aging`, followed by each lifetime's oldest young flag's creation
    time. Constants of the code are literals; `condition`'s parameters are named
    (`%(name)s`) and `_params` gives their values.

    `few`: for a condition that matches a few projects (by id), whose young flags are counted
    per project from `ProjectFlagDay` (a sum over the days after the cutoff's day, and the
    flags of that day after the cutoff, one range of an index) rather than read one by one
    for every project in one scan, which is what suits the whole list."""
    flag_count, project = table(ProjectFlagCount), table(Project)

    def c(field: str) -> str:
        return f"c.{column(ProjectFlagCount, field)}"

    def p(field: str) -> str:
        return f"p.{column(Project, field)}"

    groups = lifetime_groups()

    def types_in(column: str, group: int) -> str:
        return f"{column} IN ({', '.join(literal(name) for name in groups[group][1])})"

    # FILTER rather than SUM(CASE ...): PostgreSQL aggregates it faster (docs/projects-list.md,
    # "Measured choices"). A sum over no row is NULL, which the SELECT turns into 0.
    aging_sums = "".join(
        f",\n              SUM({c('total')}) FILTER (WHERE {c('stale')} = FALSE"
        f" AND {types_in(c('type'), g)}) AS aging_{g}"
        for g in range(len(groups))
    )
    if few:
        young, first = _young_per_project(vendor)
        potentially_stale = " + ".join(
            f"COALESCE(counted.aging_{g}, 0) - ({young[g]})" for g in range(len(groups))
        )
        firsts = [f"({first[g]})" for g in range(len(groups))]
        fresh_joins = ""
    else:
        potentially_stale = " + ".join(
            f"COALESCE(counted.aging_{g}, 0) - COALESCE(fresh_{g}.young, 0)"
            for g in range(len(groups))
        )
        # When the oldest of them outlives its type's lifetime, the figures change with no
        # write.
        firsts = [f"fresh_{g}.first" for g in range(len(groups))]
        # Per lifetime, its types' flags younger than it: one range scan of `feature_fresh`
        # (type, created_at) each, over the last 7 or 40 days only.
        fresh_joins = _fresh_joins(vendor)
    # The project's own fields, each under its field's name, then its figures.
    project_fields = (
        "id",
        "name",
        "description",
        "mode",
        "default_stickiness",
        "created_at",
        "updated_at",
        "archived_at",
    )
    expressions = {name: p(name) for name in project_fields} | {
        "feature_count": "CAST(COALESCE(counted.flags, 0) AS BIGINT)",
        "stale_count": "CAST(COALESCE(counted.stale, 0) AS BIGINT)",
        "potentially_stale_count": f"CAST({potentially_stale or '0'} AS BIGINT)",
        "member_count": f"COALESCE(members.{column(ProjectMemberCount, 'total')}, 0)",
        "last_flag_event_at": f"activity.{column(ProjectFlagActivity, 'last_flag_event_at')}",
        "last_flag_seen_at": f"activity.{column(ProjectFlagActivity, 'last_flag_seen_at')}",
    }
    if aging:
        expressions.update(zip((figure.name for figure in AGING_COLUMNS), firsts, strict=True))
    return f"""
SELECT {_select_list(expressions, aging)}
  FROM {project} p
  LEFT JOIN (SELECT {c("project")} AS project_id, SUM({c("total")}) AS flags,
              SUM({c("total")}) FILTER (WHERE {c("stale")} = TRUE) AS stale{aging_sums}
               FROM {flag_count} c
              GROUP BY {c("project")}) counted ON counted.project_id = {p("id")}{fresh_joins}
  LEFT JOIN {table(ProjectMemberCount)} members
    ON members.{column(ProjectMemberCount, "project")} = {p("id")}
  LEFT JOIN {table(ProjectFlagActivity)} activity
    ON activity.{column(ProjectFlagActivity, "project")} = {p("id")}
 WHERE {condition}
"""


def _params(now: datetime, project_id: str | None, ids: Sequence[str]) -> dict[str, Any]:
    """The values of the named parameters of `_figures_sql` and of the owners' statement."""
    params: dict[str, Any] = {"project": project_id}
    params.update({f"id_{index}": value for index, value in enumerate(ids)})
    if connection.vendor != "postgresql":
        for group, (lifetime, _) in enumerate(lifetime_groups()):
            cutoff = (now - lifetime).astimezone(UTC)
            day_end = datetime.combine(cutoff.date() + timedelta(days=1), time(), UTC)
            params[f"cutoff_{group}"] = connection.ops.adapt_datetimefield_value(cutoff)
            params[f"cutoff_day_{group}"] = cutoff.date().isoformat()
            params[f"cutoff_day_end_{group}"] = connection.ops.adapt_datetimefield_value(day_end)
    return params


def _aware(row: tuple) -> tuple:
    """A row from SQLite with its datetimes as PostgreSQL's driver gives them: aware, in UTC.
    SQLite's driver gives naive UTC datetimes (and text for computed values)."""
    values = list(row)
    # The aging columns are there only when the statement asked for them.
    for index in (index for index in TIME_COLUMNS if index < len(values)):
        value = values[index]
        if isinstance(value, str):
            value = parse_datetime(value)
        if value is not None and value.tzinfo is None:
            values[index] = value.replace(tzinfo=UTC)
    return tuple(values)


@cache
def _favorites_sql() -> str:
    return (
        f"SELECT {column(FavoriteProject, 'project')} FROM {table(FavoriteProject)}"
        f" WHERE {column(FavoriteProject, 'user')} = %(user)s"
    )


Run = Callable[..., list[list[tuple]]]


def _run_postgresql(
    statements: list[str], params: dict[str, Any], *, prepare: bool = False
) -> list[list[tuple]]:
    """Each statement's rows, on the open PostgreSQL connection (see `_read_snapshot`)."""
    results = []
    with prepared_cursor_on(connection, prepare=prepare) as wrapped:
        for sql in statements:
            wrapped.execute(sql, params)
            results.append(wrapped.fetchall())
    return results


@contextmanager
def _read_snapshot(*, one_statement: bool = False) -> Iterator[Run]:
    """A function that runs statements and returns each one's rows, all read from one snapshot
    of the database for as long as the block lasts: `run(statements, params, prepare=False)`.
    `prepare`: on PostgreSQL, keep the statements prepared on the connection (only for
    statements whose plan suits every call). `one_statement`: the block runs a single
    statement, which reads one snapshot by itself, so on PostgreSQL no transaction is opened
    for it (three round trips fewer: BEGIN, its settings, COMMIT)."""
    if connection.vendor != "postgresql":
        # SQLite serves this from one file for one process; no snapshot to pin, and its
        # transactions here take the write lock (IMMEDIATE), which a read must not.
        def run_sqlite(statements: list[str], params: dict[str, Any], *, prepare: bool = False):
            with connection.cursor() as cursor:
                results = []
                for sql in statements:
                    cursor.execute(sql, params)
                    results.append(cursor.fetchall())
                return results

        yield run_sqlite
        return
    if one_statement:
        with connection.cursor():  # connected, as Django connects (health check included)
            yield _run_postgresql
        return
    # JIT off for this transaction: from ~1,400 projects the planner's estimate passes
    # jit_above_cost, and compiling then costs more than running the statement.
    with read_snapshot(local_settings=["jit = off"]):
        yield _run_postgresql


# The most projects by id whose statements are kept prepared (see `_computed`).
PREPARED_IDS_MAX = 4

# The most projects by id whose young flags are counted per project from the day counts
# (`_figures_sql`'s `few`); more are read in the one scan the whole list uses, which costs
# less past about this many (docs/projects-list.md, "Measured choices"): the size of a
# worker's first read or of the entries that outlive their age together.
FEW_IDS_MAX = 100


@dataclass(frozen=True, slots=True)
class _Read:
    """What the figures' statements read for a scope: the figures' rows, each project's rows of
    `owners_sql`, and the projects the caller marked as favorite."""

    rows: list[tuple]
    owners: dict[str, list[tuple]]
    favorites: set[str]


def _read(
    run: Run,
    *,
    scope: str,
    now: datetime,
    project_id: str | None = None,
    ids: Sequence[str] = (),
    favorites_of: int | None = None,
    aging: bool = False,
) -> _Read:
    """The rows of the projects of the scope (see `_computed`), in no order."""
    condition = scope_condition(scope, len(ids))
    few = scope == "one" or (scope == "ids" and len(ids) <= FEW_IDS_MAX)
    statements = [_figures_sql(condition, connection.vendor, aging, few), owners_sql(condition)]
    if favorites_of is not None:
        statements.append(_favorites_sql())
    params = _params(now, project_id, ids) | {"user": favorites_of}
    # Prepared: the lists' statements, which have no parameter (the favorites' only the
    # user's id), and those of a few projects by id, which the kept list runs for the projects
    # written since its last read (planning them cost more than running them). Not those of
    # many ids: one statement text per count.
    rows, owners_rows, *favorite_rows = run(
        statements,
        params,
        prepare=scope in ("active", "archived") or len(ids) <= PREPARED_IDS_MAX,
    )
    if connection.vendor != "postgresql":
        rows = [_aware(row) for row in rows]
    return _Read(
        rows=rows,
        owners=owners_by_project(owners_rows),
        favorites={row[0] for row in favorite_rows[0]} if favorite_rows else set(),
    )


def _project(row: tuple, owners: Sequence[tuple], favorite: bool) -> dict[str, Any]:
    """A project's entry from its row of `_figures_sql` and its rows of `owners_sql`."""
    at = COLUMN
    features = row[at["feature_count"]]
    stale = row[at["stale_count"]]
    potentially_stale = row[at["potentially_stale_count"]]
    return {
        "favorite": favorite,
        "id": row[_ID],
        "name": row[_NAME],
        "description": row[at["description"]],
        "health": health(features, stale, potentially_stale),
        "featureCount": features,
        "staleFeatureCount": stale,
        "potentiallyStaleFeatureCount": potentially_stale,
        "memberCount": row[at["member_count"]],
        "mode": row[at["mode"]],
        "defaultStickiness": row[at["default_stickiness"]],
        "createdAt": row[at["created_at"]],
        "updatedAt": row[at["updated_at"]],
        "lastUpdatedAt": row[at["last_flag_event_at"]],
        "archivedAt": row[at["archived_at"]],
        "lastReportedFlagUsage": row[at["last_flag_seen_at"]],
        "owners": owner_entries(owners),
    }


def _computed(
    run: Run,
    *,
    scope: str,
    now: datetime,
    project_id: str | None = None,
    ids: Sequence[str] = (),
    favorites_of: int | None = None,
    aging: bool = False,
) -> list[tuple[dict[str, Any], datetime | None]]:
    """The projects of the scope (see `compute_projects`), each with, when `aging`, the time
    until which its figures hold unless something is written: when its oldest young flag
    outlives its type's lifetime (None: never; always None without `aging`, which costs about
    2 µs a project)."""
    read = _read(
        run,
        scope=scope,
        now=now,
        project_id=project_id,
        ids=ids,
        favorites_of=favorites_of,
        aging=aging,
    )
    # The order is decided here, not by the database: SQLite's lower() folds only ASCII and
    # PostgreSQL's follows the database's locale, while str.casefold is full Unicode case
    # folding, and comparing the folded strings goes by code point everywhere.
    read.rows.sort(key=sort_key)
    return [
        (
            _project(row, read.owners.get(row[_ID], ()), row[_ID] in read.favorites),
            _aging_at(row[AGING]) if aging else None,
        )
        for row in read.rows
    ]


def sort_key(row: tuple) -> tuple[str, str]:
    """The list's order of a project from its row: by name case-insensitively, then id (see
    `_computed`)."""
    return row[_NAME].casefold(), row[_ID]


def _aging_at(firsts: Sequence[datetime | None]) -> datetime | None:
    """When the first young flag outlives its lifetime, from each lifetime's oldest young flag
    (None: that lifetime has none)."""
    return min(
        (
            first + lifetime
            for first, (lifetime, _) in zip(firsts, lifetime_groups(), strict=True)
            if first
        ),
        default=None,
    )


def compute_projects(
    *,
    scope: str,
    now: datetime,
    project_id: str | None = None,
    ids: Sequence[str] = (),
    favorites_of: int | None = None,
) -> list[dict[str, Any]]:
    """The projects of `scope` ("active", "archived", "one" with `project_id`, or "ids" with
    `ids`) as the API lists them, ordered by name case-insensitively, then id; `favorite` is
    true for the projects user `favorites_of` marked (read in the same snapshot; none for
    None). Times are aware datetimes in UTC, which the JSON encoders write as DRF's
    DateTimeField does (`...Z`)."""
    with _read_snapshot() as run:
        computed = _computed(
            run, scope=scope, now=now, project_id=project_id, ids=ids, favorites_of=favorites_of
        )
    return [project for project, _ in computed]


@dataclass(frozen=True, slots=True)
class _KeptEntry:
    """One project's entry of the projects list, as computed for one version of the project."""

    version: str
    kept_at: float  # time.monotonic()
    valid_until: datetime | None  # see `_computed`
    sort_key: tuple[str, str]
    # The entry encoded twice, as a caller who marked the project as favorite sees it and as
    # anyone else does: a response joins them without building either again.
    encoded_favorite: bytes
    encoded: bytes


# Projects whose entries a worker keeps, in each of the caches below; a list of more
# projects computes those that do not fit on each read.
MAX_KEPT_PROJECTS = 20_000

# Per process: project id -> its entry as last computed. Threads share it; a race between two
# of them costs one computation more, never a wrong entry (each is read and written whole).
_kept_entries: BoundedCache[str, _KeptEntry] = BoundedCache(
    "projects list: kept entries", max_entries=MAX_KEPT_PROJECTS
)


@lru_cache(maxsize=4)
def _versions_sql(condition: str, vendor: str) -> str:
    """The projects matching `condition` with their list versions, whether user `%(user)s`
    marked them as favorite, and on PostgreSQL the statement's time, which the figures'
    lifetimes are measured against. One statement: one snapshot."""
    now = "CURRENT_TIMESTAMP" if vendor == "postgresql" else "NULL"
    favorite = (
        f"LEFT JOIN {table(FavoriteProject)} f ON f.{column(FavoriteProject, 'project')}"
        f" = p.{column(Project, 'id')} AND f.{column(FavoriteProject, 'user')} = %(user)s"
    )
    versions, key, version = (
        table(ProjectListVersion),
        column(ProjectListVersion, "project_id"),
        column(ProjectListVersion, "version"),
    )
    # Each project's version, followed by the version of every user's and group's name (the
    # owners an entry shows); NULL for a project without a version row (none should be).
    names = f"(SELECT n.{version} FROM {versions} n WHERE n.{key} = {literal(OWNER_NAMES)})"
    return (
        f"SELECT p.{column(Project, 'id')}, v.{version} || COALESCE({names}, ''), {now},"
        f" f.{column(FavoriteProject, 'project')} IS NOT NULL"
        f" FROM {table(Project)} p LEFT JOIN {versions} v ON v.{key} = p.{column(Project, 'id')}"
        f" {favorite} WHERE {condition}"
    )


def _encodings(project: dict[str, Any]) -> tuple[bytes, bytes]:
    """The project's entry encoded with `favorite` true, and with it false (see
    `_KeptEntry`)."""
    rest = encode_json(project | {"favorite": False})[len(b'{"favorite":false,') :]
    return b'{"favorite":true,' + rest, b'{"favorite":false,' + rest


def _now(version_rows: list[tuple]) -> datetime:
    """The time the figures' lifetimes are measured against: on PostgreSQL the statement's,
    as the figures' own statement uses it; on SQLite this process's."""
    return version_rows[0][2] if version_rows and version_rows[0][2] else times.now()


def _kept_or_missing(
    version_rows: list[tuple], max_age: float
) -> tuple[list[_KeptEntry], dict[str, str | None]]:
    """The kept entries still true for the versions read, and the projects to compute again,
    with their versions."""
    now = _now(version_rows)
    kept_since = monotonic() - max_age
    entries: list[_KeptEntry] = []
    missing: dict[str, str | None] = {}
    kept = _kept_entries.reader()
    for project_id, version, _, _ in version_rows:
        entry = kept(project_id)
        if (
            entry is None
            or entry.version != version
            or entry.kept_at < kept_since
            or (entry.valid_until is not None and entry.valid_until <= now)
        ):
            missing[project_id] = version
        else:
            entries.append(entry)
    return entries, missing


def projects_list_body(*, archived: bool, user_id: int | None) -> bytes:
    """The body of GET /api/admin/projects: `{"version":1,"projects":[...]}`, encoded as DRF's
    renderer writes JSON (compact, UTF-8, not ASCII-escaped, datetimes as `...Z`).

    Each project's entry is computed again only when the database has drawn a new version for
    the project since this process last computed it (`ProjectListVersion`: every write that
    changes what the entry shows draws one, in its own transaction), when one of its flags has
    outlived its type's lifetime since, or when the entry is older than
    `PROJECTS_LIST_ENTRY_MAX_AGE`. The versions (with the caller's favorites) and the entries
    computed again are read from one snapshot: the body is what computing every entry in that
    snapshot gives. With `PROJECTS_LIST_ENTRY_MAX_AGE` 0, every entry's rows are read on every
    request (`_computed_list_body`). Either way, concurrent reads of the same list share one
    computation unless `PROJECTS_LIST_COALESCE` is off."""
    scope = "archived" if archived else "active"
    # Inside a caller's transaction, the caller's own writes may not have drawn their versions
    # yet (PostgreSQL draws them at commit): every entry's rows are read, and no entry is
    # kept by version. Nor is the computation shared: only this caller's transaction holds
    # those writes. (An encoding is reused only for rows read equal, uncommitted or not.)
    if in_callers_transaction():
        return _computed_list_body(scope, user_id)
    max_age = settings.PROJECTS_LIST_ENTRY_MAX_AGE
    if max_age <= 0:
        key, body = (scope, user_id, "computed"), lambda: _computed_list_body(scope, user_id)
    else:
        key, body = (scope, user_id), lambda: _kept_list_body(scope, user_id, max_age)
    if not settings.PROJECTS_LIST_COALESCE:
        return body()
    # Concurrent reads of the same list share one computation begun after they all arrived
    # (flagadmin.core.coalesce): the body is the same for the same scope and caller.
    return _list_bodies.run(key, body)


def _computed_list_body(scope: str, user_id: int | None) -> bytes:
    """The list's body with every entry's rows read from one snapshot, none kept by version
    (an entry's encoding is reused for rows read equal, see `_encoded`)."""
    with _read_snapshot() as run:
        read = _read(run, scope=scope, now=times.now(), favorites_of=user_id)
    encoded_entries = _encoded_entries[scope]
    kept = encoded_entries.reader()
    entries = [
        _encoded(encoded_entries, kept(row[_ID]), row, read.owners.get(row[_ID], ()))
        for row in read.rows
    ]
    entries.sort(key=lambda entry: entry.sort_key)
    if len(encoded_entries) > 2 * len(entries) + 1000:
        # Projects deleted or moved to the other scope: drop theirs, keep the listed ones.
        _drop_unlisted(encoded_entries, {row[_ID] for row in read.rows})
    return _list_body(entries, read.favorites)


def _drop_unlisted(entries: BoundedCache[str, Any], listed: set[str]) -> None:
    for project_id in [key for key in entries if key not in listed]:
        entries.pop(project_id)


@dataclass(frozen=True, slots=True)
class _EncodedEntry:
    """A project's entry encoded from its rows (see `_encoded`)."""

    source: tuple  # its row of `_figures_sql` and its rows of `owners_sql`
    sort_key: tuple[str, str]
    encoded_favorite: bytes
    encoded: bytes


# Per process and scope (each list prunes its own): project id -> its entry as last encoded,
# with the rows it was encoded from. Threads share them; a race between two of them costs one
# encoding more, never a wrong entry.
_encoded_entries: dict[str, BoundedCache[str, _EncodedEntry]] = {
    scope: BoundedCache(f"projects list: encoded entries ({scope})", max_entries=MAX_KEPT_PROJECTS)
    for scope in ("active", "archived")
}


def _encoded(
    encoded_entries: BoundedCache[str, _EncodedEntry],
    entry: _EncodedEntry | None,
    row: tuple,
    owners: Sequence[tuple],
) -> _EncodedEntry:
    """The project's entry from its row and owners' rows, read in this request's snapshot;
    `entry` is the one `encoded_entries` holds for the project. An entry is a function of
    those rows alone, so the encoding of the same rows is reused: what is read is compared
    whole, never assumed unchanged. At 1,000 projects, building and encoding every entry was
    about a quarter of the computed list's Python time."""
    source = (row, tuple(owners))
    if entry is not None and entry.source == source:
        return entry
    project = _project(row, owners, favorite=False)
    encoded_favorite, encoded = _encodings(project)
    entry = _EncodedEntry(
        source=source,
        sort_key=sort_key(row),
        encoded_favorite=encoded_favorite,
        encoded=encoded,
    )
    encoded_entries.put(row[_ID], entry)
    return entry


def _list_body(entries: Sequence[_EncodedEntry | _KeptEntry], favorites: set[str]) -> bytes:
    """`{"version":1,"projects":[...]}` from the entries in their order, each as a caller who
    marked the project as favorite sees it when it is in `favorites`."""
    encoded = [
        entry.encoded_favorite if entry.sort_key[1] in favorites else entry.encoded
        for entry in entries
    ]
    if not encoded:
        return b'{"version":1,"projects":[]}'
    # One join: the body (half a megabyte at 1,000 projects) is copied once.
    encoded[0] = b'{"version":1,"projects":[' + encoded[0]
    encoded[-1] += b"]}"
    return b",".join(encoded)


# Per process: the reads of the projects list being computed, by scope and caller.
_list_bodies: Coalescer[bytes] = Coalescer()


def _kept_list_body(scope: str, user_id: int | None, max_age: float) -> bytes:
    """The list's body from the kept entries and those computed again (see
    `projects_list_body`)."""
    versions_sql = _versions_sql(scope_condition(scope), connection.vendor)
    params = {"user": user_id}
    # Most reads find every entry kept: one statement, outside any transaction.
    with _read_snapshot(one_statement=True) as run:
        version_rows = run([versions_sql], params, prepare=True)[0]
    entries, missing = _kept_or_missing(version_rows, max_age)
    if missing:
        # Some to compute: the versions again, and those entries, from one snapshot.
        with _read_snapshot() as run:
            version_rows = run([versions_sql], params, prepare=True)[0]
            entries, missing = _kept_or_missing(version_rows, max_age)
            now = _now(version_rows)
            kept_at = monotonic()
            for project, valid_until in _computed(
                run, scope="ids", now=now, ids=list(missing), aging=True
            ):
                encoded_favorite, encoded = _encodings(project)
                entry = _KeptEntry(
                    version=missing[project["id"]],
                    kept_at=kept_at,
                    valid_until=valid_until,
                    sort_key=(project["name"].casefold(), project["id"]),
                    encoded_favorite=encoded_favorite,
                    encoded=encoded,
                )
                entries.append(entry)
                # A project without a version (none should be) is computed on every read.
                if entry.version is not None:
                    _kept_entries.put(project["id"], entry)
    favorites = {project_id for project_id, _, _, favorite in version_rows if favorite}
    if len(_kept_entries) > 2 * len(version_rows) + 1000:
        # Projects deleted or archived since: drop their entries, keep the listed ones.
        _drop_unlisted(_kept_entries, {row[0] for row in version_rows})
    entries.sort(key=lambda entry: entry.sort_key)
    return _list_body(entries, favorites)


def project_detail(project_id: str, *, user_id: int | None) -> dict[str, Any] | None:
    """One project (archived or not) as the list shows it, with the environments enabled in
    it; None when there is no such project."""
    projects = compute_projects(
        scope="one", now=times.now(), project_id=project_id, favorites_of=user_id
    )
    if not projects:
        return None
    environments = list(
        ProjectEnvironment.objects.filter(project_id=project_id)
        .order_by("environment__sort_order", "environment__name")
        .values_list("environment_id", flat=True)
    )
    return {**projects[0], "environments": environments}


def project_figures(project_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The projects of `project_ids` as the list shows them, by id (for the Django admin)."""
    if not project_ids:
        return {}
    projects = compute_projects(scope="ids", now=times.now(), ids=list(project_ids))
    return {project["id"]: project for project in projects}
