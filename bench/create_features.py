"""Benchmark of POST /api/admin/projects/:projectId/features on PostgreSQL, served by gunicorn,
loaded by wrk with a new flag name on every request.

    .venv/bin/python bench/create_features.py --existing 2000
    .venv/bin/python bench/create_features.py --existing 100000

Drops and recreates the database (`--database-url`, default
postgres://postgres@127.0.0.1:5432/flagadmin_bench_features), migrates it, and seeds `--existing`
flags through the models (bulk_create) the way the API leaves them: spread over 20 projects,
one entry per environment, lifecycle stage `initial`, a tag on every tenth, some archived, and
their `feature-created` audit events. Then it serves the app with gunicorn and drives the
creation with wrk at 8 connections: each request creates a flag with a name unique across
threads, requests and runs (a per-thread counter and a random run prefix, see
`harness.post_lua`). After a warm-up it prints creations/s and the p50/p99 latency, and checks
that every request got 201.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_bench_features"
FLAG_TYPES = ["release", "experiment", "operational", "kill-switch", "permission"]
PROJECTS = 20


def seed(*, existing: int, seed_value: int = 42) -> None:
    """Fill the (migrated, empty) database with `existing` flags. Deterministic for a seed."""
    from django.db import transaction
    from django.utils import timezone

    from features.models import (
        Feature,
        FeatureEnvironment,
        FeatureLifecycleStage,
        FeatureTag,
        Tag,
    )
    from flagadmin.core.models import AuditEvent, User
    from projects.models import Environment, Project, ProjectEnvironment

    rng = random.Random(seed_value)
    now = timezone.now()
    batch = 5000

    with transaction.atomic():
        projects = [
            Project.objects.get(pk="default"),
            *Project.objects.bulk_create(
                [Project(id=f"bench-{i:02d}", name=f"Bench {i:02d}") for i in range(PROJECTS - 1)]
            ),
        ]
        environments = list(Environment.objects.all())
        ProjectEnvironment.objects.bulk_create(
            [
                ProjectEnvironment(project=project, environment=environment)
                for project in projects[1:]
                for environment in environments
            ]
        )
        tags = Tag.objects.bulk_create(
            [Tag(type_id="simple", value=f"team-{i}") for i in range(10)]
        )
        creator_id = User.ADMIN_TOKEN_USER_ID

        for start in range(0, existing, batch):
            features = []
            for i in range(start, min(start + batch, existing)):
                created = now - timedelta(days=rng.randint(0, 120), seconds=rng.randint(0, 86400))
                features.append(
                    Feature(
                        name=f"existing-flag-{i:07d}",
                        project=projects[i % PROJECTS],
                        type=FLAG_TYPES[i % len(FLAG_TYPES)],
                        created_at=created,
                        created_by_id=creator_id,
                        archived_at=(created + timedelta(days=1)) if rng.random() < 0.1 else None,
                    )
                )
            Feature.objects.bulk_create(features)
            FeatureEnvironment.objects.bulk_create(
                [
                    FeatureEnvironment(feature=feature, environment=environment)
                    for feature in features
                    for environment in environments
                ]
            )
            FeatureLifecycleStage.objects.bulk_create(
                [
                    FeatureLifecycleStage(feature=f, stage="initial", entered_at=f.created_at)
                    for f in features
                ]
            )
            FeatureTag.objects.bulk_create(
                [
                    FeatureTag(feature=f, tag=tags[index % len(tags)])
                    for index, f in enumerate(features)
                    if index % 10 == 0
                ]
            )
            AuditEvent.objects.bulk_create(
                [
                    AuditEvent(
                        type="feature-created",
                        created_at=f.created_at,
                        created_by="admin-tok",
                        created_by_user_id=creator_id,
                        project=f.project_id,
                        feature_name=f.name,
                        data={"name": f.name, "type": f.type, "project": f.project_id},
                    )
                    for f in features
                ]
            )


def checkpoint(url: str) -> None:
    """Write the seeding's dirty pages out now, so the server's background writes of 100,000
    seeded flags do not land in the measured seconds."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def process_cpu_seconds(match: str) -> float:
    """CPU time (user + system) used so far by the processes whose command line contains
    `match` (Linux /proc), to tell the app's and the database's cost per request apart from
    whatever else the machine is running."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if match not in command:
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all CPUs, /proc/stat)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def post_json(url: str, body: dict, token: str) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": token, "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--existing", type=int, default=2000, help="flags present before")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=1, help="threads per gthread worker")
    parser.add_argument(
        "--worker-class",
        choices=["sync", "gthread"],
        default="sync",
        help="gthread keeps connections alive (sync closes each after its response)",
    )
    parser.add_argument(
        "--stack",
        choices=harness.STACKS,
        default="gunicorn",
        help="gunicorn alone, or the production stack (nginx in front of gunicorn)",
    )
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--duration", type=int, default=20, help="measured seconds")
    parser.add_argument("--warmup", type=int, default=3, help="discarded seconds before")
    parser.add_argument("--port", type=int, default=None, help="gunicorn's port (default: any)")
    args = parser.parse_args()

    url = harness.create_database(args.database_url)
    harness.setup_django(url)
    token = harness.admin_token("admin-tok")
    started = time.monotonic()
    seed(existing=args.existing)
    harness.analyze(url)
    checkpoint(url)
    print(f"seeded {args.existing} flags in {time.monotonic() - started:.1f} s")

    path = "/api/admin/projects/default/features"
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    worker_class = "gthread" if args.threads > 1 else args.worker_class
    with harness.serve(
        url,
        workers=args.workers,
        threads=args.threads,
        worker_class=worker_class,
        stack=args.stack,
        port=args.port,
    ) as base_url:
        status, body = post_json(f"{base_url}{path}", {"name": "bench-check"}, token)
        if status != 201:
            print(f"the first creation answered {status}: {body[:500]!r}")
            return 1
        headers = {"Authorization": token, "Content-Type": "application/json"}
        lua = harness.post_lua(path, '{"name": "bench-{n}", "description": "benchmark"}')
        if args.warmup:
            harness.run_wrk(
                f"{base_url}{path}", headers=headers, duration_s=args.warmup, warmup_s=0, lua=lua
            )
        database = urlsplit(url).path.lstrip("/")
        app_before = harness.server_cpu_seconds(base_url)
        db_before = process_cpu_seconds(f"postgres: 15/main: postgres {database}")
        machine_before = machine_busy_seconds()
        wrk_before = children_cpu_seconds()
        result = harness.run_wrk(
            f"{base_url}{path}",
            headers=headers,
            connections=args.connections,
            duration_s=args.duration,
            warmup_s=0,
            lua=lua,
        )
        app_ms = (harness.server_cpu_seconds(base_url) - app_before) / result.requests * 1e3
        db_ms = (
            (process_cpu_seconds(f"postgres: 15/main: postgres {database}") - db_before)
            / result.requests
            * 1e3
        )
        # wrk is this process's only child that ends during the run.
        wrk_ms = (children_cpu_seconds() - wrk_before) / result.requests * 1e3
        busy_ms = (machine_busy_seconds() - machine_before) / result.requests * 1e3
        other_share = max(0.0, busy_ms - app_ms - db_ms - wrk_ms) * result.requests_per_s / 1e3

    title = (
        f"POST {path} with {args.existing} flags present "
        f"({args.connections} connections, {'nginx + ' if args.stack == 'proxy' else ''}"
        f"{args.workers} gunicorn {worker_class} workers"
        + (f" x {args.threads} threads" if worker_class == "gthread" else "")
        + ")"
    )
    print(harness.format_result(title, result).replace("requests/s", "creations/s"))
    print(
        f"CPU per creation: server {app_ms:.2f} ms, PostgreSQL backends {db_ms:.2f} ms, "
        f"wrk {wrk_ms:.2f} ms; everything else on the machine (kernel, other processes) used "
        f"{other_share:.2f} of its {os.cpu_count()} CPUs meanwhile "
        f"(load average before the run: {load_before})"
    )
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
