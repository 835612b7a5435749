"""The projects list without trigger-kept tables, measured against the current one (issue 28,
item 2): every per-project figure computed at read time with Django ORM aggregates, behind a
bounded per-process cache. A benchmark-only prototype: nothing in the app imports it.

    .venv/bin/python bench/projects_list_orm.py --projects 51 --flags 2000
    .venv/bin/python bench/projects_list_orm.py --projects 1000 --flags 100000 --served
    .venv/bin/python bench/projects_list_orm.py --database-url sqlite:////tmp/bench.sqlite3
    .venv/bin/python bench/projects_list_orm.py --write-side    # creations, triggers on and off

The list (default): seeds `--database-url` as `bench/projects_list.py` does (unless
`--no-seed`; a `sqlite:///` URL works too), asserts that the prototype's body equals the real
endpoint's byte for byte (active and archived, with and without a caller's favorites), then
runs `--rounds` rounds, each variant in turn for `--seconds` in this process: the current list
computed (`PROJECTS_LIST_ENTRY_MAX_AGE=0`) and kept, the prototype cold (no cache) and warm
(its cache; the lists that hit are also timed one by one). It prints a table of the medians:
wall time, the app's CPU and the database backend's CPU (PostgreSQL) per list. `--served`
also serves each variant with gunicorn (2 gthread workers x 8 threads) and drives it with wrk
at 8 connections, in alternating rounds.

`--write-side`: seeds as `bench/creation_cost.py` does (2,000 flags, 20 projects), then
alternates rounds with the derived data's triggers in force and dropped (what the prototype's
design would have): flag creations in this process through Django's WSGI handler, and the
creation's statements replayed by pgbench at 1 and 8 clients.

The prototype keeps the list's promise that a committed write is in the next list: its cache
is keyed by a stamp of every committed write, read on each request (PostgreSQL: the snapshot,
`pg_current_snapshot()`, which changes when any transaction of the cluster that wrote commits;
SQLite: `PRAGMA data_version` with the connection's own count of changes). With no trigger,
no cheaper stamp is both sound and narrower (PostgreSQL's table statistics lag behind the
commits), so any write anywhere empties it: docs/derived-data.md, "Why triggers, measured"."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness

# The served prototype reads these (see `served_application`).
CACHE_ENV = "BENCH_ORM_CACHE"
# A folder where each served worker writes its cache's hits and misses (file named by its pid).
STATS_ENV = "BENCH_ORM_STATS"

# --- the prototype ---------------------------------------------------------------------------


def write_stamp() -> str:
    """A value that changes whenever a write is committed (see the module's docstring). Read
    first in a snapshot, it stands for that snapshot's data."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_current_snapshot()::text")
            return cursor.fetchone()[0]
        cursor.execute("PRAGMA data_version")
        version = cursor.fetchone()[0]
    raw = connection.connection
    return f"{version}:{id(raw)}:{raw.total_changes}"


def orm_entries(scope: str, now: datetime) -> tuple[list[tuple[str, str, dict]], datetime | None]:
    """The scope's projects as the list shows them (favorite false), as (name folded, id,
    entry) in the list's order, and when they stop holding with no write (the oldest young
    flag outliving its type's lifetime; None: never). Every figure from the rows themselves."""
    from django.db.models import Count, Max, Min, OuterRef, Q, Subquery

    from features.models import Feature
    from flagadmin.core.models import AuditEvent, Role
    from groups.models import GroupMembership
    from overview.project_figures import health, lifetime_groups
    from projects.models import Project, ProjectRoleAssignment
    from projects.selectors import PROJECT_ROLE_TYPES, owner_entries

    archived = scope == "archived"
    # No order: the list's is decided in Python, as the current list's is.
    projects = Project.objects.filter(archived_at__isnull=not archived).order_by()

    live = Q(features__archived_at__isnull=True)
    figures: dict[str, Any] = {
        "feature_count": Count("features", filter=live),
        "stale_count": Count("features", filter=live & Q(features__stale=True)),
        "last_seen": Max("features__last_seen_at"),
    }
    groups = lifetime_groups()
    for group, (lifetime, types) in enumerate(groups):
        aging = live & Q(features__stale=False, features__type__in=types)
        cutoff = now - lifetime
        figures[f"old_{group}"] = Count(
            "features", filter=aging & Q(features__created_at__lt=cutoff)
        )
        figures[f"young_since_{group}"] = Min(
            "features__created_at", filter=aging & Q(features__created_at__gte=cutoff)
        )
    fields = ("id", "name", "description", "mode", "default_stickiness")
    times = ("created_at", "updated_at", "archived_at")
    rows = projects.annotate(**figures).values(*fields, *times, *figures)

    flag_in_project = Feature.objects.filter(
        name=OuterRef("feature_name"), project=OuterRef("project")
    )
    # Newest first through `audit_flag_event_newest`, each event probed for its flag: a scalar
    # subquery, which PostgreSQL runs per row and stops at the first match, where it turns an
    # EXISTS into a join of all the project's events with all its flags.
    newest_event = (
        AuditEvent.objects.filter(project=OuterRef("pk"), feature_name__isnull=False)
        .annotate(flag=Subquery(flag_in_project.values("pk")[:1]))
        .filter(flag__isnull=False)
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    last_events = dict(
        projects.annotate(event_at=Subquery(newest_event)).values_list("id", "event_at")
    )

    # Members: users holding a project role in the project, themselves or through a group.
    counting = ProjectRoleAssignment.objects.filter(
        role__type__in=PROJECT_ROLE_TYPES, project__in=projects
    ).order_by()
    members: dict[str, set[int]] = defaultdict(set)
    for project_id, user_id in counting.filter(user__isnull=False).values_list(
        "project_id", "user_id"
    ):
        members[project_id].add(user_id)
    for project_id, user_id in (
        GroupMembership.objects.filter(group__project_assignments__in=counting)
        .order_by()
        .values_list("group__project_assignments__project_id", "user_id")
    ):
        members[project_id].add(user_id)

    owners: dict[str, list[tuple]] = defaultdict(list)
    for row in (
        ProjectRoleAssignment.objects.filter(role_id=Role.OWNER, project__in=projects)
        .order_by("created_at", "id")
        .values_list(
            "project_id",
            "user_id",
            "user__name",
            "user__username",
            "user__email",
            "user__image_url",
            "group__name",
        )
    ):
        owners[row[0]].append(row)

    entries = []
    valid_until = None
    for row in rows:
        project_id = row["id"]
        features, stale = row["feature_count"], row["stale_count"]
        potentially_stale = sum(row[f"old_{group}"] for group in range(len(groups)))
        for group, (lifetime, _) in enumerate(groups):
            young_since = row[f"young_since_{group}"]
            if young_since is not None and (
                valid_until is None or young_since + lifetime < valid_until
            ):
                valid_until = young_since + lifetime
        entry = {
            "favorite": False,
            "id": project_id,
            "name": row["name"],
            "description": row["description"],
            "health": health(features, stale, potentially_stale),
            "featureCount": features,
            "staleFeatureCount": stale,
            "potentiallyStaleFeatureCount": potentially_stale,
            "memberCount": len(members.get(project_id, ())),
            "mode": row["mode"],
            "defaultStickiness": row["default_stickiness"],
            "createdAt": row["created_at"],
            "updatedAt": row["updated_at"],
            "lastUpdatedAt": last_events.get(project_id),
            "archivedAt": row["archived_at"],
            "lastReportedFlagUsage": row["last_seen"],
            "owners": owner_entries(owners.get(project_id, ())),
        }
        entries.append((row["name"].casefold(), project_id, entry))
    entries.sort(key=lambda item: (item[0], item[1]))
    return entries, valid_until


class OrmList:
    """The list's body from `orm_entries`, each scope's encoded entries kept in a bounded
    per-process cache (cachetools' TTLCache: at most `maxsize` keys, each for at most `ttl`
    seconds) under the write stamp of the snapshot they were read in. `cache=False`: every
    list computed. Concurrent misses of one scope share one computation (the app's
    Coalescer, as the current list's do)."""

    def __init__(
        self, *, cache: bool, maxsize: int = 16, ttl: float = 30.0, stats: Path | None = None
    ) -> None:
        from cachetools import TTLCache

        from flagadmin.core.coalesce import Coalescer

        self.cache = cache
        self.kept: TTLCache = TTLCache(maxsize=maxsize, ttl=ttl)
        self.lock = threading.Lock()
        self.coalescer: Coalescer = Coalescer()
        self.hits = self.misses = 0
        self.stats = stats

    def _computed(self, scope: str) -> tuple[str, datetime | None, list[tuple[str, bytes, bytes]]]:
        from django.utils import timezone

        from flagadmin.api.renderers import encode_json
        from flagadmin.core.db import read_snapshot

        with read_snapshot():
            stamp = write_stamp()
            entries, valid_until = orm_entries(scope, timezone.now())
        encoded = []
        for _, project_id, entry in entries:
            rest = encode_json(entry)[len(b'{"favorite":false,') :]
            encoded.append((project_id, b'{"favorite":true,' + rest, b'{"favorite":false,' + rest))
        return stamp, valid_until, encoded

    def _write_stats(self) -> None:
        if self.stats is not None:
            (self.stats / str(os.getpid())).write_text(f"{self.hits} {self.misses}")

    def body(self, *, archived: bool, user_id: int | None) -> bytes:
        from django.utils import timezone

        from projects.models import FavoriteProject

        scope = "archived" if archived else "active"
        encoded = None
        if self.cache:
            key = (scope, write_stamp())
            with self.lock:
                kept = self.kept.get(key)
            if kept is not None and (kept[0] is None or timezone.now() < kept[0]):
                encoded = kept[1]
                self.hits += 1
                if self.hits % 256 == 0:
                    self._write_stats()
        if encoded is None:
            self.misses += 1
            self._write_stats()
            stamp, valid_until, encoded = self.coalescer.run(scope, lambda: self._computed(scope))
            if self.cache:
                with self.lock:
                    self.kept[(scope, stamp)] = (valid_until, encoded)
        favorites = (
            set(FavoriteProject.objects.filter(user_id=user_id).values_list("project", flat=True))
            if user_id is not None
            else set()
        )
        parts = [
            favorite if project_id in favorites else plain
            for project_id, favorite, plain in encoded
        ]
        return b'{"version":1,"projects":[' + b",".join(parts) + b"]}"


def served_application():
    """gunicorn's app for the prototype (`bench.projects_list_orm:served_application()`): the
    app itself, with the list's body from `OrmList` (`BENCH_ORM_CACHE=0`: no cache)."""
    from flagadmin.wsgi import application
    from overview import project_views

    stats = os.environ.get(STATS_ENV)
    orm_list = OrmList(
        cache=os.environ.get(CACHE_ENV, "1") != "0", stats=Path(stats) if stats else None
    )
    project_views.projects_list_body = orm_list.body
    return application


# --- the comparison, in this process --------------------------------------------------------


def backend_cpu_seconds() -> float:
    """CPU seconds used so far by this connection's PostgreSQL backend (0 on SQLite)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def assert_same_bodies(token: str, orm_list: OrmList) -> None:
    """The prototype's body equals the endpoint's, byte for byte: the active and the archived
    list as an admin token gets them over HTTP, and the list of a user with favorites."""
    from django.conf import settings
    from django.test import Client

    from overview.project_figures import projects_list_body
    from projects.models import FavoriteProject

    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=token)
    for archived in (False, True):
        served = client.get("/api/admin/projects" + ("?archived=true" if archived else ""))
        assert served.status_code == 200, served.content[:300]
        body = orm_list.body(archived=archived, user_id=None)
        assert body == served.content, f"archived={archived}: the bodies differ"
    favorite = FavoriteProject.objects.values_list("user_id", flat=True).first()
    assert favorite is not None, "the seeded data has a user with favorites"
    for max_age in (0, settings.PROJECTS_LIST_ENTRY_MAX_AGE):
        settings.PROJECTS_LIST_ENTRY_MAX_AGE = max_age
        current = projects_list_body(archived=False, user_id=favorite)
        assert orm_list.body(archived=False, user_id=favorite) == current, "favorites differ"
    print(f"same bodies: {len(body)} and {len(current)} bytes, archived and a user's favorites")


def measure(call: Callable[[], bytes], seconds: float) -> tuple[float, float, float, int]:
    """`call` repeated for about `seconds`: wall ms, app CPU ms and backend CPU ms per call."""
    call()
    calls = 0
    wall, cpu, backend = time.perf_counter(), time.process_time(), backend_cpu_seconds()
    while time.perf_counter() - wall < seconds or calls < 3:
        call()
        calls += 1
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    backend = backend_cpu_seconds() - backend
    return wall / calls * 1e3, cpu / calls * 1e3, backend / calls * 1e3, calls


def compare_in_process(rounds: int, seconds: float, token: str) -> dict[str, list[tuple]]:
    from django.conf import settings

    from overview.project_figures import projects_list_body

    max_age = settings.PROJECTS_LIST_ENTRY_MAX_AGE
    cold, warm = OrmList(cache=False), OrmList(cache=True)
    assert_same_bodies(token, warm)
    assert_same_bodies(token, cold)

    def current(age: float) -> Callable[[], bytes]:
        def call() -> bytes:
            settings.PROJECTS_LIST_ENTRY_MAX_AGE = age
            return projects_list_body(archived=False, user_id=None)

        return call

    # The warm variant's calls that hit, each timed: what a hit costs, apart from the misses
    # that writes elsewhere in the database cluster cause meanwhile.
    hit_calls: list[tuple[float, float]] = []

    def warm_call() -> bytes:
        hits = warm.hits
        wall, cpu = time.perf_counter(), time.process_time()
        body = warm.body(archived=False, user_id=None)
        if warm.hits > hits:
            hit_calls.append(
                ((time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3)
            )
        return body

    variants = {
        "current, computed": current(0),
        "current, kept": current(max_age),
        "ORM, cold (no cache)": lambda: cold.body(archived=False, user_id=None),
        "ORM, warm (cache)": warm_call,
    }
    results: dict[str, list[tuple]] = {name: [] for name in variants}
    results["ORM, a cache hit alone"] = []
    for round_number in range(rounds):
        # Alternate the order each round, so that no variant always follows the same one.
        order = list(variants) if round_number % 2 == 0 else list(reversed(variants))
        for name in order:
            hit_calls.clear()
            misses = warm.misses
            results[name].append(measure(variants[name], seconds))
            wall, cpu, backend, calls = results[name][-1]
            print(
                f"round {round_number + 1} {name}: {wall:.2f} ms wall, {cpu:.2f} ms app CPU, "
                f"{backend:.2f} ms backend CPU per list ({calls} lists)",
                flush=True,
            )
            if variants[name] is warm_call and hit_calls:
                hit = (
                    statistics.median(call[0] for call in hit_calls),
                    statistics.median(call[1] for call in hit_calls),
                    float("nan"),
                    len(hit_calls),
                )
                results["ORM, a cache hit alone"].append(hit)
                print(
                    f"  of which {len(hit_calls)} hits (median {hit[0]:.2f} ms wall,"
                    f" {hit[1]:.2f} ms app CPU) and {warm.misses - misses} misses",
                    flush=True,
                )
    settings.PROJECTS_LIST_ENTRY_MAX_AGE = max_age
    print(f"warm cache: {warm.hits} hits, {warm.misses} misses")
    return results


def print_table(title: str, results: dict[str, list[tuple]], columns: list[str]) -> None:
    print(f"\n{title}")
    print("| variant | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, runs in results.items():
        if not runs:
            continue
        spreads = [
            f"{statistics.median(run[i] for run in runs):.2f}"
            f" ({min(run[i] for run in runs):.2f}-{max(run[i] for run in runs):.2f})"
            for i in range(len(columns))
        ]
        print(f"| {name} | " + " | ".join(spreads) + " |")


# --- served, with gunicorn and wrk ----------------------------------------------------------


@contextlib.contextmanager
def serve(url: str, app: str, env: dict[str, str]):
    """gunicorn with `app` (2 gthread workers x 8 threads), as `harness.serve` runs the app."""
    import subprocess

    port = harness.free_port()
    base_url = f"http://127.0.0.1:{port}"
    command = [
        str(harness.GUNICORN),
        app,
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "2",
        "--worker-class",
        "gthread",
        "--threads",
        "8",
        "--backlog",
        "1024",
        "--log-level",
        "warning",
    ]
    with tempfile.NamedTemporaryFile("w+", prefix="gunicorn-", suffix=".log") as log:
        process = subprocess.Popen(
            command,
            cwd=harness.REPO_ROOT,
            env=harness.server_env(url, **env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        harness._SERVER_PIDS[base_url] = process.pid
        try:
            harness._wait_until_ready(process, f"{base_url}/health", 60, log.name)
            yield base_url
        finally:
            harness._stop(process)
            harness._SERVER_PIDS.pop(base_url, None)


def compare_served(url: str, token: str, rounds: int, duration: int) -> dict[str, list[tuple]]:
    from bench.projects_list import cpu_seconds

    variants = {
        "current, computed": ("flagadmin.wsgi:application", {"PROJECTS_LIST_ENTRY_MAX_AGE": "0"}),
        "current, kept": ("flagadmin.wsgi:application", {}),
        "ORM, cold (no cache)": (
            "bench.projects_list_orm:served_application()",
            {CACHE_ENV: "0"},
        ),
        "ORM, warm (cache)": ("bench.projects_list_orm:served_application()", {CACHE_ENV: "1"}),
    }
    headers = {"Authorization": token}
    results: dict[str, list[tuple]] = {name: [] for name in variants}
    for round_number in range(rounds):
        order = list(variants) if round_number % 2 == 0 else list(reversed(variants))
        for name in order:
            app, env = variants[name]
            stats = Path(tempfile.mkdtemp(prefix="orm-cache-"))
            with serve(url, app, {**env, STATS_ENV: str(stats)}) as base_url:
                status, body = harness.fetch(base_url + "/api/admin/projects", headers)
                assert status == 200, body[:300]
                harness.run_wrk(
                    base_url + "/api/admin/projects", headers=headers, duration_s=5, warmup_s=0
                )
                app_before, db_before = cpu_seconds(base_url, url)
                result = harness.run_wrk(
                    base_url + "/api/admin/projects",
                    headers=headers,
                    duration_s=duration,
                    warmup_s=0,
                )
                app_after, db_after = cpu_seconds(base_url, url)
            per_request = 1e3 / max(result.requests, 1)
            results[name].append(
                (
                    result.requests_per_s,
                    result.p50_ms,
                    result.p99_ms,
                    (app_after - app_before) * per_request,
                    (db_after - db_before) * per_request,
                )
            )
            counts = [tuple(map(int, f.read_text().split())) for f in stats.iterdir()]
            shutil.rmtree(stats)
            cache = (
                f"; cache: {sum(c[0] for c in counts)} hits, {sum(c[1] for c in counts)} misses"
                if counts
                else ""
            )
            cpu = f"; CPU per request: server {results[name][-1][3]:.2f} ms, PostgreSQL " + (
                f"{results[name][-1][4]:.2f} ms"
            )
            print(
                f"round {round_number + 1} " + harness.format_result(name, result) + cpu + cache,
                flush=True,
            )
    # Not compared here: between runs minutes apart, flags outlive their lifetimes and the
    # bodies change (`assert_same_bodies` compares the designs at one moment).
    return results


# --- the write side --------------------------------------------------------------------------


def set_triggers(enabled: bool) -> None:
    """Drop the derived data's triggers (the prototype's design has none), or apply them again
    as declared and recount what they keep (`repairprojectstats`)."""
    from django.core.management import call_command
    from django.db import connection

    from flagadmin.core.derived import DERIVED, apply

    if not enabled:
        with connection.cursor() as cursor:
            for derived in DERIVED:
                for trigger in derived.postgresql_triggers:
                    cursor.execute(f"DROP TRIGGER IF EXISTS {trigger.name} ON {trigger.table}")
        return
    with connection.schema_editor() as schema_editor:
        for app in ("projects", "features"):
            apply(schema_editor, app)
    call_command("repairprojectstats", stdout=io.StringIO())


def live_triggers() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal")
        return cursor.fetchone()[0]


def compare_write_side(url: str, rounds: int, creations: int, duration: int) -> dict:
    import secrets

    from bench import creation_cost

    token = harness.admin_token("orm-write-side")
    results: dict[str, list[tuple]] = {}
    for round_number in range(rounds):
        order = (True, False) if round_number % 2 == 0 else (False, True)
        for enabled in order:
            set_triggers(enabled)
            name = f"triggers {'in force' if enabled else 'dropped'} ({live_triggers()} live)"
            prefix = f"orm-{secrets.token_hex(3)}"
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):
                statements = creation_cost.in_process(token, creations, prefix)
                script = creation_cost.pgbench_script(statements, f"{prefix}-captured", 0)
                for clients in (1, 8):
                    creation_cost.replay(url, script, clients, duration)
            figures = []
            for line in captured.getvalue().splitlines():
                print(f"round {round_number + 1} {name}: {line}", flush=True)
                # "in-process: N creations, X ms of the app's CPU and Y ms of wall time each",
                # "pgbench, N clients: R creations/s, PostgreSQL X ms of CPU per creation"
                numbers = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", line.replace(",", ""))]
                if line.startswith("in-process") or line.startswith("pgbench"):
                    figures += numbers[1:3]
            results.setdefault(name.split(" (")[0], []).append(tuple(figures))
    set_triggers(True)
    return results


# --- the command -----------------------------------------------------------------------------


def prepare_database(url: str, no_seed: bool) -> None:
    if url.startswith("sqlite:"):
        path = Path(url.removeprefix("sqlite:///"))
        if not no_seed:
            path.unlink(missing_ok=True)
    elif not no_seed:
        harness.create_database(url)
    harness.setup_django(url)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=int, default=51)
    parser.add_argument("--flags", type=int, default=2000)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--no-seed", action="store_true", help="reuse the seeded database")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="per variant and round")
    parser.add_argument("--served", action="store_true", help="also gunicorn + wrk (PostgreSQL)")
    parser.add_argument("--served-rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=15, help="seconds of each wrk run")
    parser.add_argument("--write-side", action="store_true", help="creations, triggers on/off")
    parser.add_argument("--creations", type=int, default=1000, help="in-process, per round")
    args = parser.parse_args()

    if args.write_side:
        from bench.create_features import seed as seed_flags

        url = args.database_url or creation_cost_url()
        prepare_database(url, args.no_seed)
        if not args.no_seed:
            seed_flags(existing=2000)
            harness.analyze(url)
        results = compare_write_side(url, args.rounds, args.creations, 8)
        print_table(
            "Flag creation (medians of the rounds, range in brackets)",
            results,
            [
                "app CPU ms in-process",
                "wall ms in-process",
                "pgbench 1 client/s",
                "PG CPU ms (1)",
                "pgbench 8 clients/s",
                "PG CPU ms (8)",
            ],
        )
        return 0

    url = args.database_url or harness.DEFAULT_DATABASE_URL + "_orm"
    from bench.projects_list import compact_figures, seed

    started = time.monotonic()
    prepare_database(url, args.no_seed)
    token = harness.admin_token("orm")
    if not args.no_seed:
        seed(projects=args.projects, flags=args.flags, events_per_flag=2)
        if not url.startswith("sqlite:"):
            harness.analyze(url)
            compact_figures(url)
        print(f"seeded in {time.monotonic() - started:.0f} s")
    from django.db import connection

    print(f"{connection.vendor}, {args.projects} projects / {args.flags} flags")
    results = compare_in_process(args.rounds, args.seconds, token)
    print_table(
        "In-process, one list at a time (medians of the rounds, range in brackets)",
        results,
        ["wall ms", "app CPU ms", "backend CPU ms"],
    )
    if args.served:
        connection.close()
        served = compare_served(url, token, args.served_rounds, args.duration)
        print_table(
            "Served, gunicorn 2 gthread x 8, wrk 8 connections (medians, range)",
            served,
            ["requests/s", "p50 ms", "p99 ms", "server CPU ms", "PostgreSQL CPU ms"],
        )
    return 0


def creation_cost_url() -> str:
    from bench.creation_cost import DEFAULT_DATABASE_URL

    return DEFAULT_DATABASE_URL + "_orm"


if __name__ == "__main__":
    sys.exit(main())
