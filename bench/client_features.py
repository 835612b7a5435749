"""Benchmark of the client API that every SDK instance polls, on PostgreSQL, served by gunicorn,
loaded by wrk at 8 connections:

    .venv/bin/python bench/client_features.py --flags 1000

1. `GET /api/client/features`, the full answer (1,000 flags, about half enabled with strategies
   and constraints);
2. the same with `If-None-Match` carrying the ETag: 304 Not Modified;
3. `POST /api/client/metrics`, each report counting 20 flags, while a writer turns flags on and
   off through the admin API: the toggles' latency during the load shows whether the metrics
   hold up other writes.

Drops and recreates its database (`--database-url`, default
postgres://postgres@127.0.0.1:5432/flagadmin_i11_bench_client), seeds the flags through the
admin API's services, checks every answer's status, and prints requests/s and p50/p99.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness
from bench.create_features import children_cpu_seconds, machine_busy_seconds, process_cpu_seconds

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_i11_bench_client"


def seed(flags: int) -> None:
    """`flags` flags in project default; every other one enabled in development with a
    flexibleRollout and a constraint, every tenth also with a second strategy naming two users
    (Unleash 8.2 has no userWithId type: a constraint on userId, as its UI makes it)."""
    from features.models import Feature
    from features.services import create_feature
    from features.strategy_services import add_feature_strategy, set_feature_environment_enabled
    from flagadmin.api.principals import TokenPrincipal
    from flagadmin.core.models import ApiToken, TokenType
    from projects.models import Project

    actor = TokenPrincipal(ApiToken.objects.filter(type=TokenType.ADMIN).first())
    project = Project.objects.get(pk="default")
    for number in range(flags):
        feature = create_feature(
            project_id=project.pk, name=f"bench-flag-{number:05d}", actor=actor
        )
        feature = Feature.objects.get(pk=feature.pk)
        if number % 2:
            continue
        add_feature_strategy(
            feature=feature,
            environment="development",
            name="flexibleRollout",
            parameters={"rollout": str(number % 100), "stickiness": "userId"},
            constraints=[{"contextName": "appName", "operator": "IN", "values": ["shop", "web"]}],
            variants=[],
            actor=actor,
        )
        if number % 10 == 0:
            add_feature_strategy(
                feature=feature,
                environment="development",
                name="default",
                parameters={},
                constraints=[
                    {"contextName": "userId", "operator": "IN", "values": ["alice", "bob"]}
                ],
                variants=[],
                actor=actor,
            )
        set_feature_environment_enabled(
            feature=feature, environment="development", enabled=True, actor=actor
        )


def request(url: str, token: str, *, body: dict | None = None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    sent = {"Authorization": token, **(headers or {})}
    if data is not None:
        sent["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=sent, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def toggles_during(base_url: str, admin: str, stop: threading.Event, latencies: list[float]):
    """Turn flags on and off through the admin API until `stop`, timing each call."""
    number = 1
    while not stop.is_set():
        name = f"bench-flag-{number:05d}"
        for state in ("on", "off"):
            url = f"{base_url}/api/admin/projects/default/features/{name}/environments/development/{state}"  # noqa: E501
            started = time.monotonic()
            status, _, _ = request(url, admin, body={})
            latencies.append((time.monotonic() - started) * 1000)
            if status != 200:
                raise RuntimeError(f"toggle answered {status}")
        number = (number + 2) % 1000
        time.sleep(0.05)


def measured(base_url: str, database: str, run) -> tuple[harness.WrkResult, str]:
    """Run `run()` (one wrk run) and say what one request cost in CPU: gunicorn, the
    PostgreSQL backends, wrk, and how much of the machine everything else took meanwhile (the
    machine is shared; these costs, unlike requests/s, do not depend on what else runs)."""
    port = base_url.rsplit(":", 1)[1]
    backends = f"postgres: 15/main: postgres {database}"
    app, db = process_cpu_seconds(f"127.0.0.1:{port}"), process_cpu_seconds(backends)
    wrk, busy = children_cpu_seconds(), machine_busy_seconds()
    result = run()
    count = max(result.requests, 1)
    app_ms = (process_cpu_seconds(f"127.0.0.1:{port}") - app) / count * 1e3
    db_ms = (process_cpu_seconds(backends) - db) / count * 1e3
    wrk_ms = (children_cpu_seconds() - wrk) / count * 1e3
    busy_ms = (machine_busy_seconds() - busy) / count * 1e3
    others = max(0.0, busy_ms - app_ms - db_ms - wrk_ms) * result.requests_per_s / 1e3
    return result, (
        f"  CPU per request: gunicorn {app_ms:.2f} ms, PostgreSQL {db_ms:.2f} ms, wrk "
        f"{wrk_ms:.2f} ms; other processes used {others:.2f} of the {os.cpu_count()} CPUs"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flags", type=int, default=1000)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    # gthread by default: SDKs keep their connection open between polls, and sync workers close
    # every connection after one response (a new TCP handshake per request).
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--worker-class", choices=["sync", "gthread"], default="gthread")
    parser.add_argument("--port", type=int, default=8250)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--duration", type=int, default=15, help="measured seconds")
    parser.add_argument("--only", choices=["full", "304", "metrics"], action="append")
    args = parser.parse_args()
    only = set(args.only or ["full", "304", "metrics"])

    url = harness.create_database(args.database_url)
    harness.setup_django(url)
    admin = harness.admin_token("admin-tok")
    from flagadmin.core.models import TokenType
    from flagadmin.core.tokens import issue_token

    client = issue_token(
        name="bench-sdk", token_type=TokenType.CLIENT, projects=["*"], environment="development"
    )[1]
    started = time.monotonic()
    seed(args.flags)
    harness.analyze(url)
    print(f"seeded {args.flags} flags in {time.monotonic() - started:.1f} s")

    worker_class = args.worker_class
    setup = f"{args.connections} connections, {args.workers} gunicorn {worker_class} workers" + (
        f" x {args.threads} threads" if worker_class == "gthread" else ""
    )
    failed = False
    with harness.serve(
        url, workers=args.workers, threads=args.threads, worker_class=worker_class, port=args.port
    ) as base_url:
        features = f"{base_url}/api/client/features"
        status, headers, body = request(features, client)
        etag = headers.get("ETag")
        count = len(json.loads(body)["features"]) if status == 200 else 0
        print(f"GET /api/client/features: {status}, {len(body)} bytes, {count} flags, ETag {etag}")
        if status != 200 or count != args.flags:
            return 1
        if request(features, client, headers={"If-None-Match": etag})[0] != 304:
            print("If-None-Match with the ETag did not answer 304")
            return 1

        database = url.rsplit("/", 1)[1]
        if "full" in only:
            result, cpu = measured(
                base_url,
                database,
                lambda: harness.run_wrk(
                    features, headers={"Authorization": client}, duration_s=args.duration
                ),
            )
            print(harness.format_result(f"GET /api/client/features, full answer ({setup})", result))
            print(cpu)
            failed |= not result.ok
        if "304" in only:
            result, cpu = measured(
                base_url,
                database,
                lambda: harness.run_wrk(
                    features,
                    headers={"Authorization": client, "If-None-Match": etag},
                    duration_s=args.duration,
                ),
            )
            print(harness.format_result(f"GET /api/client/features, 304 ({setup})", result))
            print(cpu)
            failed |= not result.ok
        if "metrics" in only:
            toggles = {
                f"bench-flag-{n:05d}": {"yes": n % 7, "no": 1, "variants": {}} for n in range(20)
            }
            report = {
                "appName": "bench",
                "instanceId": "bench-{n}",
                "bucket": {"start": "2026-01-01T00:00:00Z", "stop": "2026-01-01T00:01:00Z"},
            }
            template = json.dumps(report)[:-2] + ', "toggles": ' + json.dumps(toggles) + "}}"
            lua = harness.post_lua("/api/client/metrics", template)
            stop, latencies = threading.Event(), []
            writer = threading.Thread(
                target=toggles_during, args=(base_url, admin, stop, latencies), daemon=True
            )
            writer.start()
            try:
                result, cpu = measured(
                    base_url,
                    database,
                    lambda: harness.run_wrk(
                        f"{base_url}/api/client/metrics",
                        headers={"Authorization": client, "Content-Type": "application/json"},
                        duration_s=args.duration,
                        lua=lua,
                    ),
                )
            finally:
                stop.set()
                writer.join()
            title = f"POST /api/client/metrics, 20 flags per report ({setup})"
            print(harness.format_result(title, result).replace("requests/s", "posts/s"))
            print(cpu)
            if latencies:
                latencies.sort()
                print(
                    f"admin toggles meanwhile: {len(latencies)} calls, p50 "
                    f"{statistics.median(latencies):.1f} ms, max {latencies[-1]:.1f} ms"
                )
            failed |= not result.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
