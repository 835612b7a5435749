"""Mixed load on PostgreSQL, served by gunicorn: connections listing projects while others
create flags continuously.

    .venv/bin/python bench/projects_mixed.py --projects 1000 --flags 100000

Seeds the database as `bench/projects_list.py` does (`--no-seed` reuses a seeded one), serves
the app with gunicorn and runs two wrk at once over the same seconds: `GET /api/admin/projects`
at `--list-connections` (8) and `POST /api/admin/projects/default/features` with new names at
`--create-connections` (2). Prints the list's requests/s, p50 and p99, the creations/s with
their p50 and p99, and whether the figures the database keeps still equal a recomputation.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness
from bench.projects_list import compact_figures, cpu_seconds, seed

CREATE_PATH = "/api/admin/projects/default/features"
LIST_PATH = "/api/admin/projects"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=int, default=1000)
    parser.add_argument("--flags", type=int, default=100000)
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
    parser.add_argument("--list-connections", type=int, default=8)
    parser.add_argument("--create-connections", type=int, default=2)
    parser.add_argument("--duration", type=int, default=15, help="seconds measured")
    parser.add_argument("--warmup", type=int, default=5, help="seconds discarded first")
    parser.add_argument("--no-seed", action="store_true", help="reuse the seeded database")
    parser.add_argument("--port", type=int, default=None, help="gunicorn's port (default: any)")
    parser.add_argument(
        "--no-coalesce",
        action="store_true",
        help="each list read computes its own body (PROJECTS_LIST_COALESCE=0)",
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

    from features import project_stats
    from features.models import Feature

    worker_class = "gthread" if args.threads > 1 else "sync"
    results: dict[str, harness.WrkResult] = {}

    def drive_both(base_url: str, seconds: int) -> None:
        """Both loads at once for `seconds`; their figures into `results`."""
        loads = {
            "list": {
                "url": base_url + LIST_PATH,
                "headers": {"Authorization": token},
                "connections": args.list_connections,
            },
            "create": {
                "url": base_url + CREATE_PATH,
                "headers": {"Authorization": token, "Content-Type": "application/json"},
                "connections": args.create_connections,
                "threads": 1,
                "lua": harness.post_lua(CREATE_PATH, '{"name": "mixed-{n}"}'),
            },
        }

        def drive(name: str) -> None:
            results[name] = harness.run_wrk(duration_s=seconds, warmup_s=0, **loads[name])

        drivers = [threading.Thread(target=drive, args=(name,)) for name in loads]
        for driver in drivers:
            driver.start()
        for driver in drivers:
            driver.join()

    with harness.serve(
        url,
        workers=args.workers,
        threads=args.threads,
        worker_class=worker_class,
        stack=args.stack,
        port=args.port,
        env={"PROJECTS_LIST_COALESCE": "0"} if args.no_coalesce else None,
    ) as base_url:
        status, body = harness.fetch(base_url + LIST_PATH, {"Authorization": token})
        if status != 200:
            print(f"GET {LIST_PATH} answered {status}: {body[:500]!r}", file=sys.stderr)
            return 1
        if args.warmup:
            drive_both(base_url, args.warmup)
        flags_before = Feature.objects.count()
        app_before, db_before = cpu_seconds(base_url, url)
        drive_both(base_url, args.duration)
        app_after, db_after = cpu_seconds(base_url, url)

    created = Feature.objects.count() - flags_before
    counts_exact = project_stats.stored() == project_stats.recounted()
    times_exact = project_stats.stored_activity() == project_stats.recomputed_activity()
    print(
        f"mixed load, {Feature.objects.count()} flags at the end ({created} created); "
        f"{'nginx + ' if args.stack == 'proxy' else ''}gunicorn "
        f"{args.workers} {worker_class} workers x {args.threads} threads; wrk "
        f"{args.list_connections} connections listing + {args.create_connections} creating, "
        f"{args.duration} s measured after {args.warmup} s of warm-up; concurrent list reads "
        f"{'each computed' if args.no_coalesce else 'coalesced'}"
    )
    print(harness.format_result(f"GET {LIST_PATH}", results["list"]))
    print(
        harness.format_result(f"POST {CREATE_PATH}", results["create"]).replace(
            "requests/s", "creations/s"
        )
    )
    print(
        f"CPU per second of load: gunicorn {(app_after - app_before) / args.duration:.2f} s, "
        f"PostgreSQL backends {(db_after - db_before) / args.duration:.2f} s, of the machine's "
        f"2 CPUs (load average at the end: "
        f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])})"
    )
    print(
        "stored figures equal a recomputation from the rows: "
        f"counts {'yes' if counts_exact else 'NO'}, times {'yes' if times_exact else 'NO'}"
    )
    ok = results["list"].ok and results["create"].ok and counts_exact and times_exact
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
