"""The search endpoints and the event log at scale (issue 27): `GET /api/admin/search/features`
over 100,000 flags, and `GET /api/admin/search/events` and `GET /api/admin/events` (all, one
project's, one flag's) over 1,000,000 events, on PostgreSQL.

    .venv/bin/python bench/search.py
    .venv/bin/python bench/search.py --flags 100000 --events 1000000 --runs 15
    .venv/bin/python bench/search.py --no-seed        # the database of a previous run

Seeds `--database-url` (dropped and created again unless `--no-seed`) in SQL: 20 projects,
the flags spread over them and over two years (types in turn, 1 in 20 stale, 1 in 50
archived), each in two environments with a tag of ten and a lifecycle stage; the events
spread over the same two years, of eight types, about those flags and fifty users. Then, for
each request of `REQUESTS`, through Django's WSGI handler in this process: the median and the
90th percentile of `--runs` timed requests (after two untimed), the number of statements,
and the plan (EXPLAIN) of each statement it ran, planned with the `SET LOCAL` settings the
request itself set. A plan that reads the flags' or the events' table with a sequential scan
fails the run (exit status 1). The figures are in docs/search.md."""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_search_bench"

REQUESTS = [
    ("features: first page", "/api/admin/search/features"),
    ("features: page 1000 of 50", "/api/admin/search/features?offset=50000"),
    ("features: by name, desc", "/api/admin/search/features?sortBy=name&sortOrder=desc"),
    ("features: one project", "/api/admin/search/features?project=IS:p7"),
    ("features: two types", "/api/admin/search/features?type=IS_ANY_OF:operational,permission"),
    ("features: a tag", "/api/admin/search/features?tag=INCLUDE:simple:t3"),
    ("features: stale", "/api/admin/search/features?state=IS:stale"),
    ("features: potentially stale", "/api/admin/search/features?state=IS:potentially-stale"),
    ("features: lifecycle live", "/api/admin/search/features?lifecycle=IS:live"),
    ("features: created since", "/api/admin/search/features?createdAt=IS_ON_OR_AFTER:2026-06-01"),
    ("features: text 'flag-0042'", "/api/admin/search/features?query=flag-0042"),
    ("features: archived", "/api/admin/search/features?archived=IS:true"),
    ("events: first page", "/api/admin/search/events"),
    ("events: page 2000 of 50", "/api/admin/search/events?offset=100000"),
    ("events: one flag", "/api/admin/search/events?feature=IS:flag-004242"),
    ("events: one project", "/api/admin/search/events?project=IS:p7"),
    ("events: a type", "/api/admin/search/events?type=IS:feature-archived"),
    ("events: a user", "/api/admin/search/events?createdBy=IS:17"),
    ("events: one month", "/api/admin/search/events?from=IS:2026-02-01&to=IS:2026-02-28"),
    ("events: text 'flag-004242'", "/api/admin/search/events?query=flag-004242"),
    ("event log: newest", "/api/admin/events"),
    ("event log: one project", "/api/admin/events?project=p7"),
    ("event log: one flag", "/api/admin/events/flag-004242"),
]
BIG_TABLES = ("features_feature", "flagadmin_auditevent")
EVENT_TYPES = [
    "feature-created",
    "feature-updated",
    "feature-environment-enabled",
    "feature-environment-disabled",
    "feature-strategy-add",
    "feature-strategy-update",
    "feature-tagged",
    "feature-archived",
]


def seed(flags: int, events: int) -> None:
    from django.db import connection, transaction

    from features.models import (
        Feature,
        FeatureEnvironment,
        FeatureLifecycleStage,
        FeatureTag,
        Tag,
    )
    from flagadmin.core.models import AuditEvent
    from projects.models import Environment, Project, ProjectEnvironment

    environments = list(Environment.objects.values_list("name", flat=True))
    with transaction.atomic():
        projects = Project.objects.bulk_create(
            [Project(id=f"p{n}", name=f"Project {n}") for n in range(20)]
        )
        ProjectEnvironment.objects.bulk_create(
            [
                ProjectEnvironment(project=p, environment_id=e)
                for p in projects
                for e in environments
            ]
        )
        tags = Tag.objects.bulk_create([Tag(type_id="simple", value=f"t{n}") for n in range(10)])
    tag_ids = [tag.id for tag in tags]
    types = ["release", "experiment", "operational", "kill-switch", "permission"]
    types_sql = "ARRAY[" + ",".join(f"'{t}'" for t in types) + "]"
    event_types_sql = "ARRAY[" + ",".join(f"'{t}'" for t in EVENT_TYPES) + "]"
    start = "TIMESTAMPTZ '2025-06-01 00:00:00+00'"
    span = "INTERVAL '730 days'"
    feature = Feature._meta.db_table
    statements = [
        f"""INSERT INTO {feature} (name, project_id, type, description, stale, impression_data,
                created_at, archived_at)
            SELECT 'flag-' || LPAD(n::text, 6, '0'), 'p' || (n % 20), ({types_sql})[1 + n % 5],
                   CASE WHEN n % 3 = 0 THEN 'About flag ' || n END, n % 20 = 0, false,
                   {start} + {span} * n / {flags},
                   CASE WHEN n % 50 = 0 THEN {start} + {span} * n / {flags} + INTERVAL '1 day'
                   END
            FROM generate_series(0, {flags - 1}) AS n""",
        f"""INSERT INTO {FeatureEnvironment._meta.db_table}
                (feature_id, environment_id, enabled, variants)
            SELECT name, environment, (length(name) + ascii(environment)) % 2 = 0, '[]'::jsonb
            FROM {feature}, unnest(ARRAY[{",".join(f"'{e}'" for e in environments)}])
                AS environment""",
        f"""INSERT INTO {FeatureTag._meta.db_table} (feature_id, tag_id, created_at)
            SELECT name, (ARRAY{tag_ids})[1 + substr(name, 6)::int % 10], created_at
            FROM {feature}""",
        f"""INSERT INTO {FeatureLifecycleStage._meta.db_table} (feature_id, stage, entered_at)
            SELECT name, 'initial', created_at FROM {feature}""",
        f"""INSERT INTO {FeatureLifecycleStage._meta.db_table} (feature_id, stage, entered_at)
            SELECT name, 'live', created_at + INTERVAL '2 days' FROM {feature}
            WHERE substr(name, 6)::int % 10 < 3""",
        f"""INSERT INTO {AuditEvent._meta.db_table} (type, created_at, created_by,
                created_by_user_id, project, feature_name, environment, data, tags)
            SELECT ({event_types_sql})[1 + n % 8], {start} + {span} * n / {events},
                   'user' || (n % 50), n % 50, 'p' || (n % {flags} % 20),
                   'flag-' || LPAD((n % {flags})::text, 6, '0'),
                   CASE WHEN n % 4 = 2 THEN 'production' END,
                   jsonb_build_object('name', 'flag-' || LPAD((n % {flags})::text, 6, '0')),
                   '[]'::jsonb
            FROM generate_series(0, {events - 1}) AS n""",
    ]
    # Bulk-loaded as a restore would be: the triggers that keep the projects list's derived
    # data (which the search does not read) are off, and the trigram indexes are built once
    # the rows are in rather than row by row.
    trigram = {name: sql for name, sql in _trigram_indexes()}
    with connection.cursor() as cursor:
        for name in trigram:
            cursor.execute(f"DROP INDEX {name}")
        for sql in statements:
            began = time.perf_counter()
            with transaction.atomic():
                cursor.execute("SET LOCAL session_replication_role = replica")
                cursor.execute(sql)
            print(f"  seeded {cursor.rowcount:>9,} rows in {time.perf_counter() - began:5.1f} s")
        began = time.perf_counter()
        for sql in trigram.values():
            cursor.execute(sql)
        print(f"  trigram indexes built in {time.perf_counter() - began:5.1f} s")


def _trigram_indexes() -> list[tuple[str, str]]:
    """The trigram indexes the migrations make on PostgreSQL, as (name, CREATE statement)."""
    from importlib import import_module

    features = import_module("features.migrations.0017_search_indexes")
    core = import_module("flagadmin.core.migrations.0012_audit_search_indexes")
    made = [
        (name, f"CREATE INDEX {name} ON features_feature USING gin ({column} gin_trgm_ops)")
        for name, column in features.TRIGRAM_INDEXES.items()
    ]
    made.append(
        (
            "audit_text_trgm",
            "CREATE INDEX audit_text_trgm ON flagadmin_auditevent "
            f"USING gin ({core.EVENT_TEXT_SQL} gin_trgm_ops)",
        )
    )
    return made


def sequential_scans(statements: list[str], settings: list[str]) -> list[str]:
    """The big tables each statement reads with a sequential scan, as `EXPLAIN` plans it with
    `settings`, the ones the request set (the searches' and the event log's `INDEX_SCANS`): a
    request that forgot them is planned as it runs."""
    from django.db import connection, transaction

    found = []
    with transaction.atomic(), connection.cursor() as cursor:
        for setting in settings:
            cursor.execute(f"SET LOCAL {setting}")
        for sql in statements:
            cursor.execute("EXPLAIN " + sql)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            found += [
                f"{table}: {sql[:160]}…"
                for table in BIG_TABLES
                if re.search(rf"Seq Scan on {table}( |$)", plan, re.MULTILINE)
            ]
    return found


def measure(client, token: str, path: str, runs: int) -> tuple[float, float, int, list[str]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(2):
        assert client.get(path, HTTP_AUTHORIZATION=token).status_code == 200
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        response = client.get(path, HTTP_AUTHORIZATION=token)
        times.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200, response.content
    with CaptureQueriesContext(connection) as captured:
        client.get(path, HTTP_AUTHORIZATION=token)
    statements = [
        query["sql"]
        for query in captured.captured_queries
        if query["sql"].lstrip().upper().startswith(("SELECT", "WITH"))
    ]
    settings = [
        setting.strip()
        for query in captured.captured_queries
        for setting in re.findall(r"SET LOCAL ([^;]+)", query["sql"])
    ]
    times.sort()
    p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
    return statistics.median(times), p90, len(statements), sequential_scans(statements, settings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--flags", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-seed", action="store_true")
    args = parser.parse_args()

    if not args.no_seed:
        harness.create_database(args.database_url)
    harness.setup_django(args.database_url)
    if not args.no_seed:
        print(f"Seeding {args.flags:,} flags and {args.events:,} events")
        seed(args.flags, args.events)
        harness.analyze(args.database_url)
    token = harness.admin_token()

    from django.test import Client

    client = Client()
    print(f"\n{'request':<32} {'median ms':>10} {'p90 ms':>8} {'queries':>8}  plans")
    failures = []
    for label, path in REQUESTS:
        median, p90, count, scans = measure(client, token, path, args.runs)
        verdict = "no sequential scan" if not scans else "SEQUENTIAL SCAN"
        print(f"{label:<32} {median:>10.1f} {p90:>8.1f} {count:>8}  {verdict}")
        failures += [f"{label}: {scan}" for scan in scans]
    for failure in failures:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
