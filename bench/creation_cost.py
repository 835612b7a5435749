"""Where a flag creation's CPU goes, without the HTTP server and its noise: the app in-process,
and PostgreSQL with the creation's own statements under pgbench.

    .venv/bin/python bench/creation_cost.py                 # 2,000 flags present
    .venv/bin/python bench/creation_cost.py --no-seed --spread 19

Seeds `--database-url` (default postgres://postgres@127.0.0.1:5432/flagadmin_bench_cost) as
`create_features.py` does, unless `--no-seed`. Then:

1. In-process: `--creations` flag creations through Django's WSGI handler (every middleware,
   DRF, the creation's statements), one after the other; prints the app's CPU and the wall time
   per creation (the difference is mostly waiting for PostgreSQL). Then the same again with a
   CPU clock around each stage (token lookup, body parsing, validation, the service and its
   statements, representation, rendering; the rest is Django's handler, the middleware and
   DRF's dispatch), printed as a breakdown of the CPU per creation.
2. PostgreSQL: the statements one creation sends (from Django's query log), replayed by pgbench
   as the app sends them (prepared; the INSERTs in one pipeline between BEGIN and COMMIT) with
   a new flag name each time, at each of `--clients`; prints creations/s and PostgreSQL's CPU
   per creation (pgbench's backends, read from /proc while they run). Every creation goes to
   `default` and updates the same counter rows; `--spread N` sends each to one of N projects.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness
from bench.create_features import PROJECTS, seed

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_bench_cost"
PATH = "/api/admin/projects/{project}/features"
APPLICATION_NAME = "flagadmin_creation_cost"


def creation_environ(token: str, name: str, project: str = "default") -> dict:
    """The WSGI environ of one creation as nginx hands it to gunicorn."""
    body = json.dumps({"name": name, "type": "release", "description": "cost"}).encode()
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": PATH.format(project=project),
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_X_REAL_IP": "127.0.0.1",
        "HTTP_AUTHORIZATION": token,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_ADDR": "",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


def create(app, token: str, name: str) -> None:
    statuses = []
    chunks = app(creation_environ(token, name), lambda status, headers, *_: statuses.append(status))
    b"".join(chunks)
    chunks.close()
    if not statuses[0].startswith("201"):
        raise SystemExit(f"creation of {name} answered {statuses[0]}")


def in_process(token: str, creations: int, prefix: str) -> list[str]:
    """Run the creations in this process; print their cost; return the SQL of one more."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    app = WSGIHandler()
    warmup = max(100, creations // 10)
    for index in range(warmup):  # imports, prepared statements, caches
        create(app, token, f"{prefix}-warm-{index}")
    cpu, wall = time.process_time(), time.perf_counter()
    for index in range(creations):
        create(app, token, f"{prefix}-{index}")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(
        f"in-process: {creations} creations, {cpu / creations * 1000:.3f} ms of the app's CPU "
        f"and {wall / creations * 1000:.3f} ms of wall time each"
    )
    with CaptureQueriesContext(connection) as captured:
        create(app, token, f"{prefix}-captured")
    return [query["sql"] for query in captured.captured_queries]


# The stages of a creation: (label, object, attribute), the outer ones first. Each is timed by
# a CPU clock around it; a stage nested in another is counted in it as well.
STAGES = [
    (
        "token lookup (authentication)",
        "flagadmin.api.authentication:ApiTokenAuthentication",
        "authenticate",
    ),
    ("JSON body parsing", "flagadmin.api.parsers:StrictJSONParser", "parse"),
    ("validation", "features.views:CREATE_FEATURE_SCHEMA", "run_validation"),
    ("service (create_feature)", "features.views", "create_feature"),
    ("  the flag's target, read", "features.services", "load_new_flag_target"),
    ("  the INSERTs", "features.services", "insert_together"),
    ("representation", "features.views", "serialize"),
    ("rendering", "rest_framework.renderers:JSONRenderer", "render"),
]


def breakdown(token: str, creations: int, prefix: str) -> None:
    """Creations again with a CPU clock around each of `STAGES`; print where the CPU went."""
    import importlib

    from django.core.handlers.wsgi import WSGIHandler

    spent = {label: 0.0 for label, _, _ in STAGES}

    def timed(label: str, function):
        def wrapper(*args, **kwargs):
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - started

        return wrapper

    for label, where, attribute in STAGES:
        module_name, _, object_name = where.partition(":")
        owner = importlib.import_module(module_name)
        if object_name:
            owner = getattr(owner, object_name)
        setattr(owner, attribute, timed(label, getattr(owner, attribute)))
    app = WSGIHandler()
    for index in range(100):
        create(app, token, f"{prefix}-breakdown-warm-{index}")
    for label in spent:
        spent[label] = 0.0
    cpu = time.process_time()
    for index in range(creations):
        create(app, token, f"{prefix}-breakdown-{index}")
    total = (time.process_time() - cpu) / creations * 1000
    print(f"CPU per creation by stage (clocked, {total:.3f} ms in all):")
    outer = 0.0
    for label, _, _ in STAGES:
        each = spent[label] / creations * 1000
        if not label.startswith(" "):
            outer += each
        print(f"  {label:<34} {each:.3f} ms")
    print(f"  {'the rest (handler, middleware, DRF)':<34} {total - outer:.3f} ms")


def pgbench_script(statements: list[str], name: str, spread: int) -> str:
    """The creation's statements with a new flag name (`:n`) and, with `spread`, one of the
    seeded projects `bench-00`... (`:p`) in place of `default`; the INSERTs in one pipeline
    between BEGIN and COMMIT, as `features.sql.insert_together` sends them."""
    lines = [r"\set n random(1, 1000000000000)"]
    project = "'default'"
    if spread:
        lines.append(rf"\set p random(0, {spread - 1})")
        project = "('bench-' || lpad(:p::text, 2, '0'))"
    reads, writes = [], []
    for sql in statements:
        sql = sql.replace(f"'{name}'", f"('{name}-' || :n)").replace("'default'", project)
        sql = " ".join(sql.split()).rstrip(";")
        # One line per statement: pgbench reads a script line by line.
        (writes if sql.startswith("INSERT") else reads).append(sql + ";")
    pipeline = [r"\startpipeline", "BEGIN;", *writes, "COMMIT;", r"\endpipeline"]
    return "\n".join([*lines, *reads, *pipeline, ""])


class BackendCpu:
    """CPU seconds of the backends serving `APPLICATION_NAME`, polled from /proc while they
    live (the last reading of each before it exits counts)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ticks: dict[int, int] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stopped.is_set():
                pids = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                    [APPLICATION_NAME],
                ).fetchall()
                for (pid,) in pids:
                    try:
                        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    except OSError:
                        continue
                    self.ticks[pid] = max(self.ticks.get(pid, 0), int(fields[11]) + int(fields[12]))
                time.sleep(0.05)

    def __enter__(self) -> BackendCpu:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join()

    @property
    def seconds(self) -> float:
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")


def replay(url: str, script: str, clients: int, duration: int) -> None:
    pgbench = shutil.which("pgbench")
    if pgbench is None:
        raise SystemExit("pgbench not found (Debian: package postgresql-15, beside the server)")
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as file:
        file.write(script)
    command = [pgbench, "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2))]
    command += ["-T", str(duration), "-f", file.name, "-d", url]
    env = dict(os.environ, PGAPPNAME=APPLICATION_NAME)
    try:
        with BackendCpu(url) as cpu:
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    finally:
        os.unlink(file.name)
    if done.returncode != 0:
        raise SystemExit(f"pgbench failed:\n{done.stdout}\n{done.stderr}")
    processed = tps = None
    for line in done.stdout.splitlines():
        if line.startswith("number of transactions actually processed"):
            processed = int(line.split(":")[1].split("/")[0])
        if line.startswith("tps ="):
            tps = float(line.split()[2])
    if not processed or tps is None:
        raise SystemExit(f"pgbench printed no figures:\n{done.stdout}")
    print(
        f"pgbench, {clients} client{'s' if clients > 1 else ''}: {tps:,.0f} creations/s, "
        f"PostgreSQL {cpu.seconds / processed * 1000:.3f} ms of CPU per creation"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--existing", type=int, default=2000, help="flags present before")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--no-seed", action="store_true", help="reuse the seeded database")
    parser.add_argument("--creations", type=int, default=3000, help="in-process creations")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--duration", type=int, default=8, help="seconds of each pgbench run")
    parser.add_argument(
        "--spread", type=int, default=0, help=f"projects to spread over (at most {PROJECTS - 1})"
    )
    args = parser.parse_args()
    if not 0 <= args.spread < PROJECTS:
        parser.error(f"--spread must be between 0 and {PROJECTS - 1}")

    if not args.no_seed:
        harness.create_database(args.database_url)
    harness.setup_django(args.database_url)
    if not args.no_seed:
        started = time.monotonic()
        seed(existing=args.existing)
        harness.analyze(args.database_url)
        print(f"seeded {args.existing} flags in {time.monotonic() - started:.0f} s")
    token = harness.admin_token("cost")
    prefix = f"cost-{secrets.token_hex(3)}"
    statements = in_process(token, args.creations, prefix)
    breakdown(token, args.creations, prefix)
    script = pgbench_script(statements, f"{prefix}-captured", args.spread)
    for clients in args.clients:
        replay(args.database_url, script, clients, args.duration)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
