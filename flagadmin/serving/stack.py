"""The production serving stack: nginx in front of the app server (granian), started and
stopped as one.

    python -m flagadmin.serving --bind 0.0.0.0:8000 --workers 2 --threads 8

nginx reads every request whole (headers within `--header-timeout`, the body within
`--body-timeout`, both buffered) before handing it to the app server over a Unix socket, so a
slow or idle client holds only an nginx connection (a few kB of memory in an event loop), never
one of the app's threads. nginx also bounds the connections of one client address that are being
answered (`--max-conn-per-client`; 429 beyond) and answers its own errors (`PROXY_ERRORS`) with
the API's error body; the app server takes whatever nginx passes on, so that the app answers
it. granian runs `flagadmin.wsgi` in `--workers` processes of `--threads` threads each
(flagadmin/serving/app_server.py), and `gunicorn flagadmin.wsgi` alone still serves the app.

The nginx configuration is generated at each start into a private temporary folder, which is
removed at the end; nothing is written to /etc. SIGTERM or SIGINT stops both gracefully; SIGHUP
makes both replace their workers gracefully and go on serving, unless the terminal the command
ran in has closed, which stops both; if either process dies, the other is stopped and the
command exits with an error. No process is ever left behind: each child gets SIGTERM from the
kernel if this process dies without stopping it (SIGKILL included), and the processes a child
leaves when it dies abruptly (nginx's workers) are adopted by this process, which stops them.

Both children write through pipes to this process, which alone writes the stack's output: a
file it is redirected to with `>` keeps every line (two writers at their own offsets overwrote
each other's), and query strings and API token secrets are redacted from every line.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import grp
import os
import pwd
import re
import selectors
import shutil
import signal
import socket as socketlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

REPO_ROOT = Path(__file__).resolve().parents[2]

# Unleash's body limit, as settings.MAX_REQUEST_BODY_BYTES (not imported: the launcher does not
# load the Django settings); tests/serving/test_serving.py holds the two equal.
MAX_BODY_BYTES = 100 * 1024

# nginx's header buffers: a request line or one header line fits in one, all the headers in all.
HEADER_BUFFERS = 4
HEADER_BUFFER_BYTES = 16 * 1024

# nginx's own errors, in the API's error body (no `'` in a message: nginx.conf quotes it so).
# `$request_id` is 32 hex digits (a UUID's value).
PROXY_ERRORS = {
    400: ("ValidationError", "The request could not be read (malformed HTTP)."),
    408: ("RequestTimeoutError", "The request was not received in time."),
    413: ("ContentTooLargeError", "The request body is larger than the limit of 100 kB."),
    414: ("ValidationError", "The request line or a header is too long."),
    429: ("TooManyRequestsError", "Too many simultaneous requests from your address."),
    494: ("ValidationError", "The request line or a header is too long."),
    500: ("InternalError", "Something went wrong on our side. The error id has been logged."),
    501: (
        "ValidationError",
        "This Transfer-Encoding is not supported: send the body with Content-Length or chunked.",
    ),
    # granian's (hyper's) refusal of a request of more than 100 header lines, answered by it
    # without a body and replaced by this one (nginx_config).
    431: ("ValidationError", "The request has more than 100 header fields."),
    502: ("ServiceUnavailableError", "The service is starting or restarting. Try again shortly."),
    504: ("ServiceUnavailableError", "The service did not answer in time. Try again shortly."),
    505: ("ValidationError", "The HTTP version is not supported: use HTTP/1.1 or HTTP/1.0."),
}

# The statuses nginx takes over in the app's answers, for the error body (PROXY_ERRORS): the app
# server's own refusal (431) and nginx's errors while proxying (a chunked body over the limit, an
# app server down or silent). The app never answers these behind nginx (its 413 is for bodies
# over the same limit, which nginx refuses first).
APP_ERRORS = (413, 431, 502, 504)
# Times a minute the stack starts granian again after it ended; one more ends the stack.
APP_SERVER_RESTARTS = 3

# Request targets granian refuses with a bodiless 400: `<`, `>` or a backtick in the path, `"`,
# `<` or `>` in the query (nginx refuses control characters itself).
URI_REFUSED_BY_THE_APP_SERVER = r"^[^?]*[<>`]|[?].*[\"<>]"
# A request target in UTF-8 (RFC 3629's sequences, byte by byte: nginx matches bytes). granian
# refuses one that is not with a bodiless 400; percent-encoded bytes pass, for the app to judge.
URI_IN_UTF8 = (
    r"^(?:[\x00-\x7F]|[\xC2-\xDF][\x80-\xBF]|\xE0[\xA0-\xBF][\x80-\xBF]"
    r"|[\xE1-\xEC\xEE\xEF][\x80-\xBF]{2}|\xED[\x80-\x9F][\x80-\xBF]"
    r"|\xF0[\x90-\xBF][\x80-\xBF]{2}|[\xF1-\xF3][\x80-\xBF]{3}|\xF4[\x80-\x8F][\x80-\xBF]{2})*$"
)

# What replaces a query string or a token's secret in the stack's output.
REDACTED = "[redacted]"
# A query string after a path, in any line: nginx's error log quotes the request line and the
# upstream URL, gunicorn's (when it serves alone) the URI of a request it could not handle.
_QUERY_STRING = re.compile(rb"(?<=[\w/.~%-])\?[^\s\"']+")
# An API token's secret (`*:*.<64 hex>`, `project:env.<64 hex>`, `user:<64 hex>`).
_TOKEN_SECRET = re.compile(rb"(?<=[.:])[0-9a-fA-F]{32,}\b")


def redact(line: bytes) -> bytes:
    """`line` without query strings and API token secrets."""
    line = _QUERY_STRING.sub(b"?" + REDACTED.encode(), line)
    return _TOKEN_SECRET.sub(REDACTED.encode(), line)


def nginx_config(
    *,
    listen: str,
    upstream_socket: Path,
    run_dir: Path,
    header_timeout: int,
    body_timeout: int,
    max_conn_per_client: int,
    access_log: bool,
) -> str:
    """The whole nginx.conf for one run (no include of the system's configuration)."""
    error_pages = "\n".join(
        f"        error_page {code} /__proxy_error/{code};" for code in PROXY_ERRORS
    )
    app_error_pages = "\n".join(
        f"            error_page {code} /__proxy_error/{code};" for code in APP_ERRORS
    )
    error_locations = "\n".join(
        f"""        location = /__proxy_error/{code} {{
            internal;
            default_type application/json;
            return {code} '{{"id":"$request_id","name":"{name}","message":"{message}"}}';
        }}"""
        for code, (name, message) in PROXY_ERRORS.items()
    )
    # The master runs as root in CI and containers: its workers then need a user of their
    # own, which can still reach the socket (the folder is traversable, the socket theirs).
    user = "user nobody nogroup;" if os.geteuid() == 0 else ""
    log = "access_log /dev/stdout main;" if access_log else "access_log off;"
    return f"""# Generated by flagadmin.serving at start-up; edits are lost.
{user}
worker_processes 1;
worker_rlimit_nofile 16384;
pid {run_dir}/nginx.pid;
error_log stderr warn;
daemon off;

events {{
    worker_connections 8192;
}}

http {{
    # The request line with its query string redacted (it may carry a credential: a token some
    # client sends as a parameter), and no header at all: nothing logged can sign a request.
    # `$request` is the line as received, whatever error page nginx answered instead.
    map $request $request_redacted {{
        "~^(?<path>[^?]*)[?][^ ]*(?<rest>.*)$" "${{path}}?{REDACTED}${{rest}}";
        default $request;
    }}
    log_format main '$remote_addr "$request_redacted" $status $body_bytes_sent $request_time';
    {log}
    client_body_temp_path {run_dir}/client_body;
    proxy_temp_path {run_dir}/proxy;
    fastcgi_temp_path {run_dir}/fastcgi;
    uwsgi_temp_path {run_dir}/uwsgi;
    scgi_temp_path {run_dir}/scgi;
    server_tokens off;

    # Slow or idle clients: the whole request within these, else the connection is closed.
    client_header_timeout {header_timeout}s;
    client_body_timeout {body_timeout}s;
    send_timeout 30s;
    keepalive_timeout 30s;
    keepalive_requests 10000;
    # The app's own limit (settings.MAX_REQUEST_BODY_BYTES), refused here already: a body the
    # app answers without reading (413) and larger than the socket's buffer would leave nginx
    # writing into a connection the app server has closed, and the client would get a 502.
    client_max_body_size {MAX_BODY_BYTES};
    client_body_buffer_size {MAX_BODY_BYTES};
    # The longest request line and header line, and the most header bytes (all the buffers);
    # longer ones are refused here with the error body (414, 494); the app server takes all that
    # nginx passes, but for more than 100 header lines (APP_ERRORS).
    large_client_header_buffers {HEADER_BUFFERS} {HEADER_BUFFER_BYTES // 1024}k;

    # Answers compressed for clients that ask (Accept-Encoding: gzip), as Unleash does; level
    # 1 gets most of the gain for little CPU (docs/benchmarks.md).
    # JSON and (always, in nginx) HTML; Django masks the admin pages' CSRF tokens (BREACH).
    gzip on;
    gzip_comp_level 1;
    gzip_min_length 1024;
    gzip_types application/json;
    gzip_proxied any;
    gzip_vary on;

    # Connections of one address being answered (an idle or half-sent request is not
    # counted, and costs nginx almost nothing).
    limit_conn_zone $binary_remote_addr zone=per_client:10m;
    limit_conn_status 429;
    limit_conn_log_level warn;

    upstream flagadmin {{
        server unix:{upstream_socket} max_fails=0;
        keepalive 32;
        # Closed by nginx before granian closes an idle one (30 s): a request sent on a
        # connection the app server is closing is lost, and one with a body is not retried.
        keepalive_timeout 20s;
    }}

    server {{
        listen {listen} backlog=4096;
        limit_conn per_client {max_conn_per_client};

        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;
        # The client's address (flagadmin/serving/client_address.py), never one a client sent.
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_set_header X-Forwarded-Proto $scheme;
        # The path as the client sent it: granian passes only the decoded one (app_environ.py).
        proxy_set_header X-Request-URI $request_uri;
        # Never a client's `Proxy` header: the app would see it as HTTP_PROXY (httpoxy).
        proxy_set_header Proxy "";
        # Whole request read before the app server sees it; whole answer taken from it at once.
        proxy_request_buffering on;
        proxy_buffering on;
        proxy_buffers 64 16k;
        proxy_busy_buffers_size 64k;
        proxy_connect_timeout 5s;
        proxy_read_timeout 30s;
        proxy_send_timeout 30s;

        # Every request passes through here, where nginx's own refusals (the connection limit,
        # a body over the limit) get the server's error pages, to @app. The file is never there.
        location / {{
            # What granian refuses with a bodiless 400 (characters RFC 3986 does not allow
            # unencoded in a path or query), refused here with the error body.
            if ($request_uri ~ "{URI_REFUSED_BY_THE_APP_SERVER}") {{
                return 400;
            }}
            if ($request_uri !~ "{URI_IN_UTF8}") {{
                return 400;
            }}
            try_files /.flagadmin-no-such-file @app;
        }}

        # nginx refuses TRACE itself (405, an HTML page without the `Allow` header RFC 9110
        # asks for); the app answers it as any method a path does not take: 405, its error
        # body, and the path's methods in `Allow`. A 405 of the app's own passes through. Not
        # through @app: the connection limit applies here too, and its 429 needs the server's
        # error page.
        error_page 405 = @method_not_allowed;
        location @method_not_allowed {{
            proxy_pass http://flagadmin;
        }}

        location @app {{
            proxy_pass http://flagadmin;
            # The app server's own bodiless refusals (APP_ERRORS) are replaced by the error
            # body. A location's error pages replace the server's: here they are only statuses
            # the app never answers, and those nginx gives while proxying, so that every answer
            # of the app passes untouched.
            proxy_intercept_errors on;
{app_error_pages}
        }}

{error_pages}
{error_locations}
    }}
}}
"""


def app_server_command(socket: Path, workers: int, threads: int) -> list[str]:
    """granian serving the app on `socket` (flagadmin/serving/app_server.py)."""
    return [
        sys.executable,
        "-m",
        "flagadmin.serving.app_server",
        "--uds",
        str(socket),
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--graceful-timeout",
        "20",
    ]


class OutputRelay:
    """The children's output, read from their pipes and written by this process alone, whole
    lines at a time, each `redact`ed. One writer keeps a file opened with `>` whole: nginx and
    the app server each writing it at their own offset overwrote each other's lines."""

    # A line longer than this is written in pieces rather than held.
    MAX_LINE = 64 * 1024

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self._partial: dict[int, bytes] = {}
        self._broken: set[int] = set()

    def watch(self, pipe: IO[bytes], target_fd: int) -> None:
        os.set_blocking(pipe.fileno(), False)
        self._partial[pipe.fileno()] = b""
        self.selector.register(pipe, selectors.EVENT_READ, target_fd)

    def watching(self) -> bool:
        return any(isinstance(key.data, int) for key in self.selector.get_map().values())

    def write(self, target_fd: int, data: bytes) -> None:
        """All of `data` to `target_fd`, or nothing once it cannot be written (a closed
        terminal, a reader gone): the stack goes on serving without its output."""
        view = memoryview(data)
        while view and target_fd not in self._broken:
            try:
                view = view[os.write(target_fd, view) :]
            except InterruptedError:
                continue
            except BlockingIOError:  # a non-blocking descriptor inherited from the caller
                time.sleep(0.01)
            except OSError:
                self._broken.add(target_fd)

    def say(self, message: str) -> None:
        self.write(1, f"flagadmin.serving: {message}\n".encode())

    def pump(self, timeout: float) -> None:
        """Relays what the children wrote, waiting up to `timeout` for something to happen
        (output, or a signal, whose wake-up fd the selector holds too)."""
        for key, _ in self.selector.select(timeout):
            if not isinstance(key.data, int):
                key.data()
                continue
            fd = key.fileobj.fileno()
            try:
                chunk = os.read(fd, 65536)
            except (BlockingIOError, InterruptedError):
                continue
            if not chunk:
                self.selector.unregister(key.fileobj)
                key.fileobj.close()
                self._flush(fd, key.data, self._partial.pop(fd) + chunk, final=True)
                continue
            self._partial[fd] = self._flush(fd, key.data, self._partial[fd] + chunk, final=False)

    def _flush(self, fd: int, target_fd: int, data: bytes, *, final: bool) -> bytes:
        end = len(data) if final or len(data) > self.MAX_LINE else data.rfind(b"\n") + 1
        if end:
            self.write(target_fd, b"".join(redact(line) for line in data[:end].splitlines(True)))
        return data[end:]


def _has_controlling_terminal() -> bool:
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        return False
    return True


# Linux's prctl(2) options.
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(None, use_errno=True).prctl


def _stopped_when_this_process_dies() -> Callable[[], None] | None:
    """A `preexec_fn`: the child is sent SIGTERM by the kernel when this process dies, however
    it dies (SIGKILL included), so nginx and the app server never outlive the stack."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def in_the_child() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent:  # the stack died before the request was made
            os.kill(os.getpid(), signal.SIGTERM)

    return in_the_child


def _adopt_orphans() -> None:
    """The children's own children whose parent dies (nginx's workers, when its master is
    killed, go on running) become this process's, which stops them (`Stack.stop`)."""
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _children_of_this_process() -> set[int]:
    me = str(os.getpid())
    children = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if stat and stat[stat.rindex(")") + 2 :].split()[1] == me:
            children.add(int(entry.name))
    return children


class Stack:
    """nginx and the app server as children of this process, with their output relayed and the
    signals this process gets acted on (`serve`)."""

    def __init__(self) -> None:
        _adopt_orphans()
        self.relay = OutputRelay()
        self.processes: list[subprocess.Popen] = []
        self.names: dict[int, str] = {}
        self._signals: list[int] = []
        self._had_terminal = _has_controlling_terminal()
        wake_read, self._wake_write = socketlib.socketpair()
        wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self.relay.selector.register(wake_read, selectors.EVENT_READ, lambda: _drain(wake_read))
        signal.set_wakeup_fd(self._wake_write.fileno(), warn_on_full_buffer=False)
        # SIGINT too where it was ignored (a shell's background job): it is how many stop it.
        # Under nohup SIGHUP stays ignored, as that asks.
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
            signal.signal(signal.SIGHUP, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals.append(signum)

    def start(
        self,
        command: list[str],
        name: str,
        replacing: subprocess.Popen | None = None,
        **popen: object,
    ) -> subprocess.Popen:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Its own process group: a terminal's Ctrl-C or hang-up reaches this process
            # alone, which stops both in order (an app server may take Ctrl-C as a quick
            # shutdown).
            process_group=0,
            preexec_fn=_stopped_when_this_process_dies(),
            **popen,
        )
        if replacing is None:
            self.processes.append(process)
        else:  # in its place: the order of `stop`
            self.processes[self.processes.index(replacing)] = process
        self.names[process.pid] = name
        self.relay.watch(process.stdout, 1)
        self.relay.watch(process.stderr, 2)
        return process

    def stop_requested(self) -> bool:
        """Acts on the signals received since the last call: True for SIGTERM or SIGINT, or
        SIGHUP once the terminal this ran in has closed; any other SIGHUP has nginx and the app
        server replace their workers gracefully, and they go on serving."""
        signals, self._signals = self._signals, []
        for signum in signals:
            if signum != signal.SIGHUP:
                self.relay.say(f"{signal.Signals(signum).name}: stopping nginx and the app server")
                return True
            if self._had_terminal and not _has_controlling_terminal():
                self.relay.say("SIGHUP, the terminal has closed: stopping nginx and the app server")
                return True
            self.relay.say("SIGHUP: nginx and the app server replace their workers gracefully")
            for process in self.processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGHUP)
        return False

    def wait_for_socket(self, path: Path, process: subprocess.Popen, timeout: float) -> bool:
        """True once the app server listens on `path`; False if a stop was asked for first."""
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self.stop_requested():
                return False
            if process.poll() is not None:
                raise SystemExit(f"the app server exited with {process.returncode} before serving")
            if time.monotonic() > deadline:
                raise SystemExit(f"the app server did not create {path} in {timeout:.0f} s")
            self.relay.pump(0.1)
        return True

    def serve(self, restart: Callable[[subprocess.Popen], int | None] | None = None) -> int:
        """Until a stop is asked for (0) or a child exits (1), unless `restart(child)` started
        it again (None; else the status to end with)."""
        while not self.stop_requested():
            dead = next((p for p in self.processes if p.poll() is not None), None)
            if dead is not None:
                self.relay.say(f"{self.names[dead.pid]} exited ({dead.returncode})")
                status = restart(dead) if restart is not None else 1
                if status is not None:
                    return status
                continue
            self.relay.pump(0.5)
        return 0

    def stop(self, graceful: dict[int, signal.Signals], timeout: float) -> None:
        """Each child in turn (nginx first: it finishes the requests in flight, which the app
        server answers) with its graceful signal, killed after `timeout` or at a second SIGTERM or
        SIGINT, then what it left behind; then their last output."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(graceful[process.pid])
            deadline = time.monotonic() + timeout
            while process.poll() is None:
                if time.monotonic() > deadline or any(s != signal.SIGHUP for s in self._signals):
                    process.kill()
                    process.wait()
                    break
                self.relay.pump(0.05)
            # Before the app server's turn: an nginx worker left running keeps connections to it.
            self.stop_orphans()
        deadline = time.monotonic() + 5
        while self.relay.watching() and time.monotonic() < deadline:
            self.relay.pump(0.05)
        signal.set_wakeup_fd(-1)

    def stop_orphans(self) -> None:
        """Stops (SIGTERM, then SIGKILL after 5 s) and reaps what was left of a child that died
        abruptly: its processes were adopted by this one (`_adopt_orphans`)."""
        orphans = _children_of_this_process() - {p.pid for p in self.processes}
        for pid in orphans:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while orphans:
            for pid in list(orphans):
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0] == 0:
                        if time.monotonic() < deadline:
                            continue
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                orphans.discard(pid)
            self.relay.pump(0.05)


def _drain(wake: socketlib.socket) -> None:
    try:
        while wake.recv(512):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def main(argv: list[str] | None = None) -> int:
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bind", default="127.0.0.1:8000", help="host:port")
    parser.add_argument("--workers", type=int, default=int(env.get("WORKERS", "2")))
    parser.add_argument("--threads", type=int, default=int(env.get("THREADS", "8")))
    parser.add_argument(
        "--header-timeout", type=int, default=int(env.get("CLIENT_HEADER_TIMEOUT", "10"))
    )
    parser.add_argument(
        "--body-timeout", type=int, default=int(env.get("CLIENT_BODY_TIMEOUT", "10"))
    )
    parser.add_argument(
        "--max-conn-per-client", type=int, default=int(env.get("MAX_CONN_PER_CLIENT", "100"))
    )
    parser.add_argument("--nginx", default=env.get("NGINX", "nginx"), help="the nginx program")
    parser.add_argument("--access-log", action="store_true", help="nginx's access log on stdout")
    args = parser.parse_args(argv)

    nginx = shutil.which(args.nginx) or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if not nginx:
        print(
            "nginx is not installed: `scripts/serve --production` installs it (apt-get).",
            file=sys.stderr,
        )
        return 2

    run_dir = Path(tempfile.mkdtemp(prefix="flagadmin-serve-"))
    run_dir.chmod(0o711)  # nginx's workers (another user under root) reach the socket
    socket = run_dir / "app.sock"
    conf = run_dir / "nginx.conf"
    conf.write_text(
        nginx_config(
            listen=args.bind,
            upstream_socket=socket,
            run_dir=run_dir,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            max_conn_per_client=args.max_conn_per_client,
            access_log=args.access_log,
        )
    )
    stack = Stack()
    graceful: dict[int, signal.Signals] = {}
    restarts: list[float] = []

    def start_app_server(replacing: subprocess.Popen | None = None) -> bool:
        """granian on the socket; False if a stop was asked for before it listened."""
        app_server = stack.start(
            app_server_command(socket, args.workers, args.threads),
            "granian",
            replacing=replacing,
            cwd=REPO_ROOT if (REPO_ROOT / "manage.py").exists() else None,
            # Trust nginx's X-Real-IP (flagadmin/serving/client_address.py): only this nginx
            # reaches the socket, and it replaces whatever a client sent in that header.
            env={**os.environ, "FLAGADMIN_BEHIND_LOCAL_NGINX": "1"},
        )
        # SIGTERM: granian finishes the requests in flight; SIGQUIT does so for nginx.
        graceful[app_server.pid] = signal.SIGTERM
        if not stack.wait_for_socket(socket, app_server, timeout=60):
            return False
        if os.geteuid() == 0:
            # nginx's workers run as nobody (nginx_config); the socket admits its owner only.
            os.chown(socket, pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid)
        return True

    def restart(dead: subprocess.Popen) -> int | None:
        """granian ends itself when one worker dies twice within 5.5 s (or dies killed): it is
        started again, up to APP_SERVER_RESTARTS times a minute; nginx answers 502 meanwhile.
        nginx's death ends the stack (1)."""
        now = time.monotonic()
        restarts[:] = [moment for moment in restarts if now - moment < 60]
        if stack.names[dead.pid] != "granian" or len(restarts) >= APP_SERVER_RESTARTS:
            return 1
        restarts.append(now)
        # Its workers, if it was killed, hold the old socket: they go, and so does its path.
        stack.stop_orphans()
        socket.unlink(missing_ok=True)
        stack.relay.say("starting granian again")
        return None if start_app_server(replacing=dead) else 0

    status = 0
    try:
        if not start_app_server():
            return 0
        proxy = stack.start([nginx, "-e", "stderr", "-p", str(run_dir), "-c", str(conf)], "nginx")
        graceful[proxy.pid] = signal.SIGQUIT
        stack.relay.say(
            f"nginx on {args.bind} -> granian ({args.workers} workers x {args.threads} "
            f"threads) on {socket}"
        )
        status = stack.serve(restart)
    finally:
        stack.stop(graceful, timeout=25)
        shutil.rmtree(run_dir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
