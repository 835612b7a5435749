"""Benchmark of GET /api/admin/projects on PostgreSQL, served by gunicorn, loaded by wrk.

    .venv/bin/python bench/projects_list.py --projects 51 --flags 2000
    .venv/bin/python bench/projects_list.py --projects 1000 --flags 100000

Drops and recreates the database (`--database-url`, default
postgres://postgres@127.0.0.1:5432/flagadmin_bench), migrates it, seeds it through the models
(bulk_create): projects with owners and members (users and groups), flags of every type (some
stale, some old enough to be potentially stale, some archived) with one entry per environment,
usage timestamps, and `--events-per-flag` audit events for each flag. Then it serves the app
with gunicorn and drives the list with wrk at 8 connections after a warm-up, and prints
requests/s and the p50/p99 latency. Each worker keeps each project's entry while the project's
version is the same (overview.project_figures), so that the runs measure what a server does
when nothing is written; `--no-reuse` computes every entry on every request
(`PROJECTS_LIST_ENTRY_MAX_AGE=0`), as a server does for the entries of projects written since.
Concurrent requests share one computation begun after they all arrived, as served;
`--no-coalesce` has each request compute its own (`PROJECTS_LIST_COALESCE=0`).
`bench/projects_mixed.py` measures it while flags are created beside it.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from urllib.parse import urlsplit

from bench import harness
from bench.create_features import process_cpu_seconds

FLAG_TYPES = ["release", "experiment", "operational", "kill-switch", "permission"]


def seed(*, projects: int, flags: int, events_per_flag: int, seed_value: int = 42) -> None:
    """Fill the (migrated, empty) database through the models. Deterministic for a seed."""
    from django.db import transaction
    from django.utils import timezone

    from features.models import Feature, FeatureEnvironment
    from flagadmin.core.models import AuditEvent, Role, User
    from groups.models import Group, GroupMembership
    from projects.models import (
        Environment,
        FavoriteProject,
        Project,
        ProjectEnvironment,
        ProjectRoleAssignment,
    )

    rng = random.Random(seed_value)
    now = timezone.now()
    batch = 5000

    with transaction.atomic():
        users = User.objects.bulk_create(
            [
                User(
                    name=f"Bench User {i}",
                    username=f"bench{i}",
                    email=f"bench{i}@example.com",
                    root_role_id=Role.EDITOR,
                )
                for i in range(max(20, projects // 2))
            ],
            batch_size=batch,
        )
        groups = Group.objects.bulk_create(
            [Group(name=f"bench-group-{i}") for i in range(max(5, projects // 20))]
        )
        GroupMembership.objects.bulk_create(
            [
                GroupMembership(group=group, user=user)
                for group in groups
                for user in rng.sample(users, 5)
            ],
            batch_size=batch,
        )

        # The seeded `default` project counts as one of `projects`.
        new_projects = Project.objects.bulk_create(
            [
                Project(
                    id=f"bench-{i:05d}",
                    # Mixed case, so the case-insensitive order has work to do.
                    name=(f"Project {i:05d}" if i % 2 else f"project {i:05d}"),
                    description=f"Benchmark project {i}",
                    created_at=now - timedelta(days=rng.randint(1, 400)),
                    updated_at=now - timedelta(days=rng.randint(0, 30)),
                    archived_at=(now - timedelta(days=1)) if i % 25 == 24 else None,
                )
                for i in range(projects - 1)
            ],
            batch_size=batch,
        )
        all_projects = [Project.objects.get(pk="default"), *new_projects]
        environments = list(Environment.objects.all())
        ProjectEnvironment.objects.bulk_create(
            [
                ProjectEnvironment(project=project, environment=environment)
                for project in new_projects
                for environment in environments
            ],
            batch_size=batch,
        )

        assignments = []
        for index, project in enumerate(all_projects):
            holders = rng.sample(users, 3)
            assignments.append(
                ProjectRoleAssignment(project=project, role_id=Role.OWNER, user=holders[0])
            )
            assignments.append(
                ProjectRoleAssignment(project=project, role_id=Role.MEMBER, user=holders[1])
            )
            if index % 3 == 0:
                assignments.append(
                    ProjectRoleAssignment(
                        project=project, role_id=Role.OWNER, group=rng.choice(groups)
                    )
                )
            if index % 2 == 0:
                assignments.append(
                    ProjectRoleAssignment(
                        project=project, role_id=Role.MEMBER, group=rng.choice(groups)
                    )
                )
        ProjectRoleAssignment.objects.bulk_create(assignments, batch_size=batch)
        FavoriteProject.objects.bulk_create(
            [FavoriteProject(user=users[0], project=p) for p in all_projects[::7]]
        )

        features = []
        for i in range(flags):
            created = now - timedelta(days=rng.randint(0, 120), seconds=rng.randint(0, 86400))
            features.append(
                Feature(
                    name=f"bench-flag-{i:07d}",
                    project=all_projects[i % len(all_projects)],
                    type=FLAG_TYPES[i % len(FLAG_TYPES)],
                    stale=rng.random() < 0.1,
                    created_at=created,
                    archived_at=(created + timedelta(days=1)) if rng.random() < 0.1 else None,
                    last_seen_at=(now - timedelta(hours=rng.randint(0, 500)))
                    if rng.random() < 0.5
                    else None,
                )
            )
        Feature.objects.bulk_create(features, batch_size=batch)

        feature_environments = []
        for feature in features:
            for environment in environments:
                seen = feature.last_seen_at
                feature_environments.append(
                    FeatureEnvironment(
                        feature=feature,
                        environment=environment,
                        enabled=rng.random() < 0.5,
                        last_seen_at=seen if environment.name == "production" else None,
                    )
                )
        FeatureEnvironment.objects.bulk_create(feature_environments, batch_size=batch)

        event_types = ["feature-created", "feature-updated", "feature-environment-enabled"]
        events = []
        for feature in features:
            for n in range(events_per_flag):
                events.append(
                    AuditEvent(
                        type=event_types[min(n, len(event_types) - 1)],
                        created_at=feature.created_at + timedelta(hours=n),
                        created_by="bench0@example.com",
                        created_by_user_id=users[0].pk,
                        project=feature.project_id,
                        feature_name=feature.name,
                        data={"name": feature.name},
                    )
                )
            if len(events) >= batch:
                AuditEvent.objects.bulk_create(events)
                events = []
        # Project-level events: they must not count as a flag's update.
        events += [
            AuditEvent(type="project-updated", created_by="bench0@example.com", project=project.pk)
            for project in all_projects
        ]
        AuditEvent.objects.bulk_create(events, batch_size=batch)


def compact_figures(url: str) -> None:
    """Rewrite the tables of the figures the database keeps. Seeding writes them 300,000
    times in one transaction, whose dead row versions nothing can prune until it ends; a live
    instance commits its writes one by one and prunes as it goes (HOT updates), so its tables
    stay at a few pages. Left as seeded, the list would read ~2,600 pages of dead rows."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM FULL ANALYZE features_projectflagcount, features_projectflagactivity")


def cpu_seconds(base_url: str, database_url: str) -> tuple[float, float]:
    """CPU seconds used so far by the server at `base_url` (gunicorn, and nginx with
    `--stack proxy`) and by the PostgreSQL backends of `database_url`: the cost per request,
    apart from whatever else the (shared) machine runs meanwhile."""
    database = urlsplit(database_url).path.lstrip("/")
    return (
        harness.server_cpu_seconds(base_url),
        process_cpu_seconds(f"postgres: 15/main: postgres {database} "),
    )


def explain() -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the statement that computes the active projects' figures,
    as the server runs it (JIT off)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from overview.project_figures import _figures_sql, _params, scope_condition

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + _figures_sql(scope_condition("active"), "postgresql"),
            _params(timezone.now(), None, ()),
        )
        return "\n".join(row[0] for row in cursor.fetchall())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=int, default=51)
    parser.add_argument("--flags", type=int, default=2000)
    parser.add_argument("--events-per-flag", type=int, default=2)
    parser.add_argument("--database-url", default=harness.DEFAULT_DATABASE_URL)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="gthread threads per worker")
    parser.add_argument(
        "--stack",
        choices=harness.STACKS,
        default="gunicorn",
        help="gunicorn alone, or the production stack (nginx in front of gunicorn)",
    )
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--duration", type=int, default=15, help="seconds measured")
    parser.add_argument("--warmup", type=int, default=5, help="seconds discarded first")
    parser.add_argument("--no-seed", action="store_true", help="reuse the seeded database")
    parser.add_argument("--port", type=int, default=None, help="gunicorn's port (default: any)")
    parser.add_argument("--query", default="", help="query string, e.g. archived=true")
    parser.add_argument(
        "--no-reuse",
        action="store_true",
        help="compute every project's entry on every request (PROJECTS_LIST_ENTRY_MAX_AGE=0)",
    )
    parser.add_argument(
        "--no-coalesce",
        action="store_true",
        help="each request computes its own answer (PROJECTS_LIST_COALESCE=0)",
    )
    parser.add_argument(
        "--explain", action="store_true", help="print the PostgreSQL plan of the main statement"
    )
    args = parser.parse_args()

    url = args.database_url
    started = time.monotonic()
    if not args.no_seed:
        harness.create_database(url)
    harness.setup_django(url)
    token = harness.admin_token()
    if not args.no_seed:
        seed(projects=args.projects, flags=args.flags, events_per_flag=args.events_per_flag)
        harness.analyze(url)
        compact_figures(url)
        print(
            f"seeded {args.projects} projects, {args.flags} flags, "
            f"{args.flags * args.events_per_flag} flag events in "
            f"{time.monotonic() - started:.0f} s"
        )

    if args.explain:
        print(explain())

    worker_class = "gthread" if args.threads > 1 else "sync"
    server_env = {}
    if args.no_reuse:
        server_env["PROJECTS_LIST_ENTRY_MAX_AGE"] = "0"
    if args.no_coalesce:
        server_env["PROJECTS_LIST_COALESCE"] = "0"
    path = "/api/admin/projects" + (f"?{args.query}" if args.query else "")
    with harness.serve(
        url,
        workers=args.workers,
        threads=args.threads,
        worker_class=worker_class,
        stack=args.stack,
        port=args.port,
        env=server_env or None,
    ) as base_url:
        status, body = harness.fetch(base_url + path, {"Authorization": token})
        if status != 200:
            print(f"GET {path} answered {status}: {body[:500]!r}", file=sys.stderr)
            return 1
        import json

        listed = len(json.loads(body)["projects"])
        headers = {"Authorization": token}
        if args.warmup:
            harness.run_wrk(base_url + path, headers=headers, duration_s=args.warmup, warmup_s=0)
        app_before, db_before = cpu_seconds(base_url, url)
        result = harness.run_wrk(
            base_url + path,
            headers=headers,
            connections=args.connections,
            duration_s=args.duration,
            warmup_s=0,
        )
        app_after, db_after = cpu_seconds(base_url, url)
    print(
        f"GET {path}: {listed} projects listed, {len(body) / 1024:.0f} kB; "
        f"{'nginx + ' if args.stack == 'proxy' else ''}gunicorn "
        f"{args.workers} {worker_class} workers x {args.threads} threads; "
        f"{'every entry computed on every request' if args.no_reuse else 'entries kept'}, "
        f"{'each request computing its own' if args.no_coalesce else 'concurrent ones shared'}; "
        f"wrk {args.connections} connections, {args.duration} s"
    )
    print(harness.format_result("result", result))
    per_request = 1e3 / max(result.requests, 1)
    print(
        f"CPU per request: server {(app_after - app_before) * per_request:.1f} ms, "
        f"PostgreSQL backends {(db_after - db_before) * per_request:.1f} ms "
        f"(load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])})"
    )
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
