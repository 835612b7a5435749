"""Reusable pieces for flagadmin's HTTP benchmarks: a PostgreSQL database, a server (gunicorn
alone, or the production stack), and wrk.

A benchmark script is typically::

    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
    from bench import harness

    url = harness.create_database("postgres://postgres@127.0.0.1:5432/flagadmin_bench")
    harness.setup_django(url)          # DJANGO settings pointed at that database, migrated
    token = harness.admin_token()      # plaintext of a fresh admin API token
    ...seed through the models (bulk_create)...
    with harness.serve(url, workers=4) as base_url:
        result = harness.run_wrk(f"{base_url}/api/admin/projects",
                                 headers={"Authorization": token})
    print(harness.format_result("GET /api/admin/projects", result))

`run_wrk` drives any request: pass `lua=` for a custom script (it gets the harness's `done`
hook appended, which reports requests/s and the p50/p99 latency), or build a POST script with
unique bodies with `post_lua(...)`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"
GUNICORN = REPO_ROOT / ".venv" / "bin" / "gunicorn"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_bench"

# One secret for the whole benchmark run: the seeding process and gunicorn must agree on it
# only for sessions, which the benchmarks do not use, but settings refuse to start without one.
_SECRET_KEY = os.environ.get("SECRET_KEY") or secrets.token_urlsafe(48)


# --- the database ------------------------------------------------------------------------


def create_database(url: str = DEFAULT_DATABASE_URL) -> str:
    """Drop the PostgreSQL database named in `url` (closing its connections) and create it
    empty. Returns `url`, for chaining."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"refusing to drop a database with the name {name!r}")
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return url


# The served app's statement bound: the caller's, read before `setup_django` lifts it for the
# seeding process.
_SERVED_STATEMENT_TIMEOUT = os.environ.get("DB_STATEMENT_TIMEOUT", "3")


def server_env(url: str, **extra: str) -> dict[str, str]:
    """The environment the app runs with in a benchmark: production settings (DEBUG off, so
    no query log), the benchmark database, quiet logs. `extra` overrides any of them."""
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": url,
            "DB_STATEMENT_TIMEOUT": _SERVED_STATEMENT_TIMEOUT,
            "DJANGO_SETTINGS_MODULE": "flagadmin.settings",
            "SECRET_KEY": _SECRET_KEY,
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    env.update(extra)
    return env


def setup_django(url: str = DEFAULT_DATABASE_URL, *, migrate: bool = True) -> None:
    """Configure Django in this process against `url` (same settings as the server) and,
    by default, apply the migrations. Call once, before importing any model."""
    # No statement bound here: this process seeds, and one bulk transaction's COMMIT (its
    # triggers' work) can take longer than the served app's 3 s on a busy machine.
    os.environ.update(server_env(url, DB_STATEMENT_TIMEOUT="0"))
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def admin_token(name: str = "bench-admin") -> str:
    """Issue an admin API token (needs `setup_django` first) and return its plaintext."""
    from flagadmin.core.models import TokenType
    from flagadmin.core.tokens import issue_token

    return issue_token(name=name, token_type=TokenType.ADMIN)[1]


def analyze(url: str = DEFAULT_DATABASE_URL) -> None:
    """VACUUM ANALYZE the whole database, so the planner sees the seeded sizes (as it would
    in a database that has lived a while) and index-only scans find an up-to-date visibility
    map."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


# --- the server ---------------------------------------------------------------------------


def free_port() -> int:
    """A free TCP port on 127.0.0.1: the first free one of `BENCH_PORTS` (e.g. `8100-8149`,
    for machines where each user has a range), else any the kernel picks."""
    first, _, last = os.environ.get("BENCH_PORTS", "").partition("-")
    candidates = range(int(first), int(last or first) + 1) if first else [0]
    for candidate in candidates:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise RuntimeError(f"no free port in BENCH_PORTS={os.environ['BENCH_PORTS']}")


# The stacks `serve` can start: gunicorn alone (as `gunicorn flagadmin.wsgi`), or the production
# stack of flagadmin.serving (nginx in front of granian).
STACKS = ("gunicorn", "proxy")

# base URL -> process id of the server serving it, for `server_cpu_seconds`.
_SERVER_PIDS: dict[str, int] = {}


def server_pid(base_url: str) -> int:
    """The pid of the server `serve` runs at `base_url` (the root of its process tree)."""
    return _SERVER_PIDS[base_url]


def _processes() -> dict[int, tuple[int, float]]:
    """Every process: its parent and the CPU time (user + system) it used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        found[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks)
    return found


def _tree(root: int, processes: dict[int, tuple[int, float]]) -> list[int]:
    found = [root]
    for pid in processes:
        ancestor = pid
        while ancestor > 1 and ancestor != root:
            ancestor = processes.get(ancestor, (0, 0.0))[0]
        if ancestor == root and pid != root:
            found.append(pid)
    return found


def process_tree(root: int) -> list[int]:
    """`root` and every process under it, `root` first."""
    return _tree(root, _processes())


def tree_cpu_seconds(root: int) -> float:
    """CPU time (user + system) used so far by `root` and every process under it."""
    processes = _processes()
    return sum(processes[pid][1] for pid in _tree(root, processes) if pid in processes)


def app_server_workers(root: int) -> list[int]:
    """The app server's workers under the stack whose root is `root` (flagadmin.serving): the
    processes running flagadmin.serving.app_server whose parent runs it too (its main one)."""

    def command(pid: int) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b""

    processes = _processes()
    server = b"flagadmin.serving.app_server"
    return [
        pid
        for pid in _tree(root, processes)[1:]
        if pid in processes and server in command(pid) and server in command(processes[pid][0])
    ]


def server_cpu_seconds(base_url: str) -> float:
    """CPU time (user + system) used so far by the server at `base_url` and every process
    under it (gunicorn's master and workers; nginx's too with the proxy stack)."""
    return tree_cpu_seconds(_SERVER_PIDS[base_url])


@contextlib.contextmanager
def serve(
    url: str = DEFAULT_DATABASE_URL,
    *,
    workers: int = 4,
    threads: int = 1,
    worker_class: str = "sync",
    stack: str = "gunicorn",
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    ready_timeout: float = 60.0,
    log_path: str | os.PathLike[str] | None = None,
) -> Iterator[str]:
    """Run `gunicorn flagadmin.wsgi` against database `url` and yield its base URL
    (`http://127.0.0.1:<port>`) once `/health` answers. The server is stopped (SIGTERM, then
    SIGKILL after 10 s) when the block ends. `worker_class` is `sync` or `gthread` (with
    `threads`); `env` adds or overrides environment variables (e.g. `DB_CONN_MAX_AGE`).
    `stack="proxy"` runs the production stack instead (`python -m flagadmin.serving`: nginx
    in front of granian, `workers` x `threads`; `worker_class` is then unused).
    The server's own output goes to `log_path` (a temporary file by default; its tail is
    printed if the server does not come up)."""
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}"
    command = [
        str(GUNICORN),
        "flagadmin.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        worker_class,
        "--threads",
        str(threads),
        "--backlog",
        "1024",
        "--log-level",
        "warning",
        # Benchmarks measure the app, not the access log (off unless asked for, as gunicorn's
        # default: a log to /dev/null would still be formatted line by line).
        *(["--access-logfile", "-"] if os.environ.get("BENCH_ACCESS_LOG") else []),
    ]
    if stack == "proxy":
        command = [
            str(PYTHON),
            "-m",
            "flagadmin.serving",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
        ]
    elif stack != "gunicorn":
        raise ValueError(f"unknown stack {stack!r}; one of {STACKS}")
    # Both are closed in the finally block below.
    log_file = (
        open(log_path, "w")  # noqa: SIM115
        if log_path
        else tempfile.NamedTemporaryFile("w+", prefix="gunicorn-", suffix=".log", delete=False)  # noqa: SIM115
    )
    process = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=server_env(url, **dict(env or {})),
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _SERVER_PIDS[base_url] = process.pid
    try:
        _wait_until_ready(process, f"{base_url}/health", ready_timeout, log_file.name)
        yield base_url
    finally:
        _stop(process)
        _SERVER_PIDS.pop(base_url, None)
        log_file.close()


def _wait_until_ready(process: subprocess.Popen, health_url: str, timeout: float, log: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(health_url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer {health_url} in {timeout} s:\n{_tail(log)}")


def _tail(path: str, lines: int = 40) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(Path(path).read_text().splitlines()[-lines:])
    return ""


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)  # gunicorn's master (or flagadmin.serving) stops the rest
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# --- the load ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrkResult:
    """What one wrk run measured. Latencies are in milliseconds."""

    requests: int
    duration_s: float
    requests_per_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    errors: int  # connect/read/write/timeout errors
    non_2xx: int  # responses with a status >= 400 (wrk's "status" errors)

    @property
    def ok(self) -> bool:
        return self.errors == 0 and self.non_2xx == 0

    @property
    def answered_2xx_per_s(self) -> float:
        """Requests answered 2xx per second: the work done, where a refusal (a 4xx) comes back
        faster than the work would have."""
        return (self.requests - self.non_2xx) / self.duration_s if self.duration_s else 0.0


# Replaced in every script by a value new for each wrk run (warm-up and measurement differ).
RUN_NONCE = "__WRK_RUN_NONCE__"

# Appended to every script: prints one machine-readable line with the figures.
_DONE_HOOK = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK_RESULT {\"requests\": %d, \"duration_us\": %d, \"p50_us\": %d, \"p90_us\": %d, " ..
    "\"p99_us\": %d, \"max_us\": %d, \"errors\": %d, \"status_errors\": %d}\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect + e.read + e.write + e.timeout, e.status))
end
"""


def ensure_wrk() -> str:
    """Path of `wrk`, installing the Debian package first if it is missing."""
    found = shutil.which("wrk")
    if found:
        return found
    apt = ["apt-get", "install", "-y", "wrk"]
    if os.geteuid() != 0 and shutil.which("sudo"):
        apt.insert(0, "sudo")
    if subprocess.run(apt, check=False).returncode != 0:
        subprocess.run([*apt[:-3], "update"], check=True)
        subprocess.run(apt, check=True)
    found = shutil.which("wrk")
    if not found:
        raise RuntimeError("wrk is not installed and apt-get could not install it")
    return found


def post_lua(path: str, body_template: str, *, method: str = "POST") -> str:
    """A wrk script sending `method path` with a JSON body in which every `{n}` is replaced by
    a value unique across threads, requests and runs (e.g. for creating flags with new names:
    `post_lua("/api/admin/projects/default/features", '{"name": "bench-{n}"}')`).
    Headers passed to `run_wrk` (Authorization, Content-Type) apply to these requests."""
    return f"""
local next_thread = 1
function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
end
local sent = 0
local template = {json.dumps(body_template, ensure_ascii=False)}
function request()
  sent = sent + 1
  local unique = "{RUN_NONCE}-" .. tid .. "-" .. sent
  local body = string.gsub(template, "{{n}}", unique)
  return wrk.format({json.dumps(method)}, {json.dumps(path)}, nil, body)
end
"""


def run_wrk(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    connections: int = 8,
    threads: int = 2,
    duration_s: int = 15,
    warmup_s: int = 3,
    lua: str | None = None,
    timeout_s: int = 5,
) -> WrkResult:
    """Drive `url` with wrk (`connections` open connections over `threads` threads) for
    `duration_s` seconds after a discarded warm-up of `warmup_s` seconds (fills caches, opens
    the workers' database connections), and return the measured figures."""
    wrk = ensure_wrk()
    command = [
        wrk,
        f"--connections={connections}",
        f"--threads={threads}",
        f"--timeout={timeout_s}s",
    ]
    for name, value in (headers or {}).items():
        command += ["--header", f"{name}: {value}"]
    script = (lua or "") + _DONE_HOOK
    if warmup_s > 0:
        _run_wrk_once([*command, f"--duration={warmup_s}s"], script, url)
    return _run_wrk_once([*command, f"--duration={duration_s}s"], script, url)


def _run_wrk_once(command: list[str], script: str, url: str) -> WrkResult:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as file:
        file.write(script.replace(RUN_NONCE, secrets.token_hex(4)))
    try:
        completed = subprocess.run(
            [*command, f"--script={file.name}", url], capture_output=True, text=True, check=True
        )
    finally:
        os.unlink(file.name)
    for line in completed.stdout.splitlines():
        if line.startswith("WRK_RESULT "):
            raw = json.loads(line.removeprefix("WRK_RESULT "))
            duration = raw["duration_us"] / 1e6
            return WrkResult(
                requests=raw["requests"],
                duration_s=duration,
                requests_per_s=raw["requests"] / duration if duration else 0.0,
                p50_ms=raw["p50_us"] / 1000,
                p90_ms=raw["p90_us"] / 1000,
                p99_ms=raw["p99_us"] / 1000,
                max_ms=raw["max_us"] / 1000,
                errors=raw["errors"],
                non_2xx=raw["status_errors"],
            )
    raise RuntimeError(f"wrk printed no result:\n{completed.stdout}\n{completed.stderr}")


def fetch(url: str, headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    """One GET (status, body): to check a response before loading it."""
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def format_result(title: str, result: WrkResult) -> str:
    """One human-readable line of figures."""
    line = (
        f"{title}: {result.requests_per_s:.1f} requests/s, p50 {result.p50_ms:.1f} ms, "
        f"p90 {result.p90_ms:.1f} ms, p99 {result.p99_ms:.1f} ms, max {result.max_ms:.1f} ms "
        f"({result.requests} requests in {result.duration_s:.1f} s)"
    )
    if not result.ok:
        line += f"; {result.errors} socket errors, {result.non_2xx} non-2xx responses"
    return line
