"""Fault tests: the production stack against a private PostgreSQL cluster that is stopped,
crashed and frozen under load, an app server worker killed, and slow clients holding connections.

    .venv/bin/python bench/faults.py            # about four minutes; needs root or the
                                                # postgres binaries runnable as this user

It starts its own PostgreSQL 15 cluster (initdb into a temporary folder, `--pg-port` 55433,
loopback only; as root the server runs as the `postgres` user through runuser), migrates it,
serves the app with `python -m flagadmin.serving` (nginx in front of 2 granian
workers), and drives a bounded load the whole time: writer threads creating flags with unique
names (a 201 is an acknowledged write, recorded), a reader listing projects, and probes of
/health and /ready. Then, one after the other:

  fast-stop     pg_ctl stop -m fast, down for 5 s, started again
  crash         pg_ctl stop -m immediate (no shutdown checkpoint), down 5 s, started again
  freeze-10s    SIGSTOP to every PostgreSQL process for 10 s, then SIGCONT
  freeze-40s    the same for 40 s
  kill-worker   kill -9 of one app server worker (granian starts another)
  slow-clients  200 connections sending a partial request header and 50 sending a body that
                stalls, held 15 s

For each it prints the answers seen during the fault (status and error name), the slowest
answer of the API, of /health and of /ready during the fault, the time from the end of the
fault to the first acknowledged write, and how many acknowledged writes are missing from the
database afterwards (must be 0). Everything stops by itself; the cluster and its folder are
removed at the end. Not part of the test suite (it takes minutes and needs the nginx and
PostgreSQL programs); CI can run it as is.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness

PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
REQUEST_TIMEOUT_S = 15  # a hang shows as "timeout" (no answer within this)


# --- the private PostgreSQL cluster ---------------------------------------------------------


class Cluster:
    """A throwaway PostgreSQL cluster in its own folder, on 127.0.0.1:`port` only."""

    def __init__(self, root: Path, port: int) -> None:
        self.data = root / "pgdata"
        self.log = root / "postgres.log"
        self.port = port
        # PostgreSQL refuses to run as root: under root it runs as `postgres`.
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, *command: str) -> None:
        subprocess.run([*self.as_user, *command], check=True, stdout=subprocess.DEVNULL)

    def init(self) -> None:
        if self.as_user:
            self.data.parent.chmod(0o755)
            self.data.mkdir(mode=0o700)
            shutil.chown(self.data, "postgres", "postgres")
            self.log.touch()
            shutil.chown(self.log, "postgres", "postgres")
        self._run(
            str(PG_BIN / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-instructions",
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {self.port}\n"
                "unix_socket_directories = ''\nmax_connections = 200\n"
                # Durable commits, as in production: a crash must not lose an acknowledged write.
                "fsync = on\nsynchronous_commit = on\nshared_buffers = 64MB\n"
            )

    def start(self) -> None:
        self._run(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str) -> None:
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def pids(self) -> list[int]:
        """The postmaster and every process under it."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        return harness.process_tree(postmaster)

    def signal_all(self, signum: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def url(self, name: str = "flagadmin") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"


# --- the load ---------------------------------------------------------------------------------


@dataclass
class Answer:
    kind: str  # "write", "read", "health", "ready"
    started: float
    finished: float
    status: str  # "201", "503 ServiceUnavailableError", "timeout", "connection error", ...
    name: str = ""  # the flag a write created

    @property
    def seconds(self) -> float:
        return self.finished - self.started


@dataclass
class Load:
    """Threads sending requests at a bounded rate until stopped; every answer is recorded."""

    host: str
    port: int
    token: str
    answers: list[Answer] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self, writers: int = 4, per_second: float = 15.0) -> None:
        run = secrets.token_hex(3)
        for number in range(writers):
            self._spawn(self._writer, f"faults-{run}-{number}", per_second)
        self._spawn(self._getter, "read", "/api/admin/projects", 10.0)
        self._spawn(self._getter, "health", "/health", 5.0)
        self._spawn(self._getter, "ready", "/ready", 2.0)

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join()

    def _spawn(self, target: Callable, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _request(
        self, conn: http.client.HTTPConnection | None, method: str, path: str, body: bytes | None
    ) -> tuple[http.client.HTTPConnection | None, str]:
        headers = {"Authorization": self.token}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            conn = conn or http.client.HTTPConnection(
                self.host, self.port, timeout=REQUEST_TIMEOUT_S
            )
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            status = str(response.status)
            if response.status >= 400:
                try:
                    status += " " + str(json.loads(data).get("name"))
                except (ValueError, AttributeError):
                    status += " (not JSON)"
            if response.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
            return conn, status
        except TimeoutError:
            status = "timeout"
        except (OSError, http.client.HTTPException) as exc:
            status = f"connection error ({type(exc).__name__})"
        if conn is not None:
            conn.close()
        return None, status

    def _record(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)

    def _paced(self, per_second: float) -> Iterator[int]:
        count = 0
        next_at = time.monotonic()
        while not self.stopping.is_set():
            yield count
            count += 1
            next_at += 1 / per_second
            delay = next_at - time.monotonic()
            if delay > 0:
                self.stopping.wait(delay)
            else:
                next_at = time.monotonic()  # fell behind (slow answers): no burst after

    def _writer(self, prefix: str, per_second: float) -> None:
        conn = None
        for count in self._paced(per_second):
            name = f"{prefix}-{count}"
            body = json.dumps({"name": name, "description": "fault test"}).encode()
            started = time.monotonic()
            conn, status = self._request(conn, "POST", "/api/admin/projects/default/features", body)
            self._record(Answer("write", started, time.monotonic(), status, name))

    def _getter(self, kind: str, path: str, per_second: float) -> None:
        conn = None
        for _ in self._paced(per_second):
            started = time.monotonic()
            conn, status = self._request(conn, "GET", path, None)
            self._record(Answer(kind, started, time.monotonic(), status))

    def between(self, start: float, end: float) -> list[Answer]:
        """Answers to requests that were in flight at some moment of [start, end]."""
        with self.lock:
            return [a for a in self.answers if a.started <= end and a.finished >= start]

    def acknowledged(self) -> list[str]:
        with self.lock:
            return [a.name for a in self.answers if a.kind == "write" and a.status == "201"]

    def first_ack_after(self, moment: float, wait_s: float = 60.0) -> float | None:
        """Seconds from `moment` to the end of the first acknowledged write started after it."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            with self.lock:
                done = [
                    a.finished
                    for a in self.answers
                    if a.kind == "write" and a.status == "201" and a.started >= moment
                ]
            if done:
                return min(done) - moment
            time.sleep(0.1)
        return None


# --- slow clients --------------------------------------------------------------------------


def hold_slow_clients(
    host: str, port: int, token: str, partial_headers: int, stalled_bodies: int, hold_s: float
) -> dict[str, int]:
    """Open the slow connections, hold them `hold_s` seconds, and count how the server ended
    them: closed (with or without an answer) or still open at the end."""
    sockets: list[socket.socket] = []
    for _ in range(partial_headers):
        sock = socket.create_connection((host, port))
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        sockets.append(sock)
    for _ in range(stalled_bodies):
        sock = socket.create_connection((host, port))
        sock.sendall(
            b"POST /api/admin/projects/default/features HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: " + token.encode() + b"\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"name": '
        )
        sockets.append(sock)
    time.sleep(hold_s)
    outcome: collections.Counter[str] = collections.Counter()
    for sock in sockets:
        sock.setblocking(False)
        try:
            data = sock.recv(200)
            if not data:
                outcome["closed by the server without an answer"] += 1
            else:
                outcome[f"answered {data.split(b' ', 2)[1].decode()} and closed"] += 1
        except BlockingIOError:
            outcome["still open"] += 1
        except OSError:
            outcome["reset by the server"] += 1
        sock.close()
    return dict(outcome)


# --- the run ----------------------------------------------------------------------------------


def stored_writes(url: str, names: list[str]) -> int:
    """How many of the flags named are in the database."""
    import psycopg

    with psycopg.connect(url, connect_timeout=10) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM features_feature WHERE name = ANY(%s)", [names]
        ).fetchone()
    return count


def missing_writes(url: str, names: list[str]) -> int:
    return len(names) - stored_writes(url, names)


def report(name: str, load: Load, start: float, end: float, recovered_s: float | None) -> None:
    during = load.between(start, end)
    statuses = collections.Counter(a.status for a in during if a.kind in ("write", "read"))
    slowest = {
        kind: max((a.seconds for a in during if a.kind in kinds), default=0.0)
        for kind, kinds in (
            ("API", ("write", "read")),
            ("/health", ("health",)),
            ("/ready", ("ready",)),
        )
    }
    probes = collections.Counter(f"{a.kind} {a.status}" for a in during if a.kind != "write")
    print(f"\n== {name}  (from the fault to the recovery: {end - start:.1f} s)")
    print("  API answers meanwhile: " + ", ".join(f"{s} x{n}" for s, n in sorted(statuses.items())))
    print(
        "  probes meanwhile: "
        + ", ".join(f"{s} x{n}" for s, n in sorted(probes.items()) if not s.startswith("read "))
    )
    print(
        "  slowest answer meanwhile: "
        + ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in slowest.items())
    )
    print(
        "  time to recover (end of the fault to the first acknowledged write): "
        + (f"{recovered_s:.2f} s" if recovered_s is not None else "NOT RECOVERED in 60 s")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-port", type=int, default=55433)
    parser.add_argument("--port", type=int, default=0, help="the app's port (default: free)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="flagadmin-faults-"))
    cluster = Cluster(root, args.pg_port)
    started_at = time.monotonic()
    failures: list[str] = []
    print(f"work folder {root}; PostgreSQL on 127.0.0.1:{args.pg_port}")
    try:
        cluster.init()
        cluster.start()
        subprocess.run(
            [
                *cluster.as_user,
                str(PG_BIN / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(args.pg_port),
                "-U",
                "postgres",
                "flagadmin",
            ],
            check=True,
        )
        url = cluster.url()
        env = harness.server_env(url, LOG_LEVEL="WARNING")
        manage = [str(harness.PYTHON), "manage.py"]
        subprocess.run([*manage, "migrate", "-v", "0"], cwd=harness.REPO_ROOT, env=env, check=True)
        token = subprocess.run(
            [*manage, "createapitoken", "--name", "faults", "--quiet-token"],
            cwd=harness.REPO_ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        log_path = root / "server.log"
        with harness.serve(
            url, workers=2, threads=8, stack="proxy", port=args.port or None, log_path=log_path
        ) as base_url:
            host, port = base_url.removeprefix("http://").split(":")
            server_pid = harness._SERVER_PIDS[base_url]
            print(f"serving {base_url}: nginx + granian 2 workers x 8 threads")
            load = Load(host, int(port), token)
            load.start()
            time.sleep(3)

            def database_fault(
                name: str, fault: Callable[[], None], lift: Callable[[], None], held_s: float
            ) -> None:
                start = time.monotonic()
                fault()
                time.sleep(held_s)
                lift()
                lifted = time.monotonic()
                recovered = load.first_ack_after(lifted)
                # At least 3 s: a worker killed at once is replaced within that.
                end = max(lifted + (recovered or 0), start + 3)
                time.sleep(max(0.0, end - time.monotonic()))
                report(name, load, start, end, recovered)
                lost = missing_writes(url, load.acknowledged())
                print(f"  acknowledged writes so far: {len(load.acknowledged())}, missing: {lost}")
                if lost or recovered is None:
                    failures.append(name)
                time.sleep(2)

            database_fault(
                "fast-stop (pg_ctl stop -m fast, down 5 s)",
                lambda: cluster.stop("fast"),
                cluster.start,
                5,
            )
            database_fault(
                "crash (pg_ctl stop -m immediate, down 5 s)",
                lambda: cluster.stop("immediate"),
                cluster.start,
                5,
            )
            for seconds in (10, 40):
                database_fault(
                    f"freeze-{seconds}s (SIGSTOP every PostgreSQL process for {seconds} s)",
                    lambda: cluster.signal_all(signal.SIGSTOP),
                    lambda: cluster.signal_all(signal.SIGCONT),
                    seconds,
                )

            workers = harness.app_server_workers(server_pid)
            database_fault(
                f"kill-worker (kill -9 of app server worker {workers[0]} of {len(workers)})",
                lambda: os.kill(workers[0], signal.SIGKILL),
                lambda: None,
                0,
            )
            print(f"  app server workers afterwards: {len(harness.app_server_workers(server_pid))}")

            start = time.monotonic()
            held = hold_slow_clients(host, int(port), token, 200, 50, hold_s=15)
            end = time.monotonic()
            report(
                "slow-clients (200 partial headers + 50 stalled bodies, held 15 s)",
                load,
                start,
                end,
                load.first_ack_after(end),
            )
            print(
                "  the slow connections at the end: "
                + ", ".join(f"{what} x{n}" for what, n in sorted(held.items()))
            )
            slow_health = max(
                (a.seconds for a in load.between(start, end) if a.kind == "health"), default=0
            )
            if slow_health > 1:
                failures.append("slow-clients")
            lost = missing_writes(url, load.acknowledged())
            print(f"  acknowledged writes so far: {len(load.acknowledged())}, missing: {lost}")
            load.stop()

        text = log_path.read_text(errors="replace")
        print(
            f"\nserver log: {len(text.splitlines())} lines, {len(text) / 1024:.0f} kB, "
            f"{text.count('Traceback')} tracebacks, "
            f"{text.count('ServiceUnavailableError')} ServiceUnavailableError lines"
        )
        sample = next((line for line in text.splitlines() if "ServiceUnavailable" in line), "")
        print(f"  e.g. {sample}")
        final = missing_writes(url, load.acknowledged())
        # Not a loss: a write whose answer was an error may still have committed (the server
        # ran it after the client stopped waiting); a retry then gets 409.
        unacknowledged = [a.name for a in load.answers if a.kind == "write" and a.status != "201"]
        print(
            f"writes answered with an error: {len(unacknowledged)}, of which stored anyway: "
            f"{stored_writes(url, unacknowledged)}"
        )
        answers = [a for a in load.answers if a.kind in ("write", "read")]
        over_6s = sum(1 for a in answers if a.seconds > 6)
        bad = collections.Counter(
            a.status for a in answers if a.status.startswith(("500", "timeout", "connection"))
        )
        print(
            f"overall: {len(load.acknowledged())} acknowledged writes, {final} missing; "
            f"{len(answers)} API answers, {over_6s} slower than 6 s; "
            f"500s, timeouts, connection errors: {dict(bad) or 'none'}"
        )
        if final or over_6s or bad:
            failures.append("overall")
    finally:
        with contextlib.suppress(Exception):
            cluster.signal_all(signal.SIGCONT)  # if stopped while frozen
        with contextlib.suppress(Exception):
            cluster.stop("immediate")
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(
        f"\nfinished in {time.monotonic() - started_at:.0f} s: "
        + (f"FAILED: {', '.join(failures)}" if failures else "every check passed")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
