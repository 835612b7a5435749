"""The production stack as it runs (`python -m flagadmin.serving`: nginx in front of granian,
flagadmin/serving/stack.py): the signals it gets and its death never leave a child behind; what
nginx and granian refuse under /api/ is answered with the API's error body; its output can be
redirected with `>` and never holds a credential.

Each stack serves an empty SQLite database: the paths asked for need none (/health, and /api/
without credentials, which is a 401 before any query)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import stat as stat_module
import subprocess
import sys
import termios
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from flagadmin.serving.stack import MAX_BODY_BYTES, PROXY_ERRORS, REDACTED

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("nginx", path="/usr/sbin:/usr/bin") is None, reason="nginx is not installed"
)


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stack_environment(tmp_path: Path) -> dict[str, str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("INIT_", "DJANGO_", "DATABASE_"))
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="flagadmin.settings",
        ENV_FILE="",
        SECRET_KEY="serving-stack-test-key",
        DATABASE_URL=f"sqlite:///{tmp_path}/stack.sqlite3",
        LOG_LEVEL="INFO",
    )
    return environment


def _sighup_by_default() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


class Stack:
    """One `python -m flagadmin.serving` process on a free port."""

    def __init__(self, tmp_path: Path, **popen: object) -> None:
        self.port = _free_port()
        # As from a terminal or a supervisor, even when the tests run under nohup: the stack
        # keeps an inherited SIG_IGN for SIGHUP, as nohup asks.
        then = popen.get("preexec_fn")

        def preexec() -> None:
            _sighup_by_default()
            if then is not None:
                then()

        popen["preexec_fn"] = preexec
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flagadmin.serving",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "1",
                "--threads",
                "2",
                "--access-log",
            ],
            cwd=REPO_ROOT,
            env=_stack_environment(tmp_path),
            **popen,
        )
        self.pid = self.process.pid
        self.run_dir: Path | None = None

    def wait_until_serving(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, f"the stack exited ({self.process.returncode})"
            with contextlib.suppress(OSError):
                if self.get("/health")[0] == 200:
                    # nginx's title: "nginx: master process <nginx> -e stderr -p <folder> ..."
                    nginx = _children_named(self)["nginx"]
                    title = Path(f"/proc/{nginx}/cmdline").read_bytes().replace(b"\0", b" ")
                    arguments = title.decode().split()
                    self.run_dir = Path(arguments[arguments.index("-p") + 1])
                    return
            assert time.monotonic() < deadline, f"the stack did not serve in {timeout} s"
            time.sleep(0.1)

    def get(self, path: str, **headers: str) -> tuple[int, bytes]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def raw(self, request: bytes) -> tuple[int, dict[str, str], bytes]:
        """Sends `request` as it is, on its own connection; the answer's status, headers (names
        in lower case) and body."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as connection:
            connection.sendall(request)
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(status_line.split()[1]), headers, body

    def processes(self) -> set[tuple[int, str]]:
        """The stack's descendants now (nginx's and granian's masters and workers), each as
        (pid, start time) so that a pid used again later is not mistaken for one of them."""
        return {(pid, _start_time(pid)) for pid in _descendants(self.pid)}

    def stop(self) -> None:
        """Kills it if it runs, and removes its folder, which a killed stack leaves."""
        processes = self.processes()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        _wait_until_gone(processes, timeout=10)
        if self.run_dir is not None:
            shutil.rmtree(self.run_dir, ignore_errors=True)


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: fields are counted after it.
    return text[text.rindex(")") + 2 :].split()


def _start_time(pid: int) -> str:
    stat = _stat(pid)
    return stat[19] if stat else ""


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))):
            children.setdefault(int(stat[1]), []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _running(processes: set[tuple[int, str]]) -> set[int]:
    """Those of `processes` still running (a zombie has exited: only its parent's wait is due)."""
    return {
        pid
        for pid, started in processes
        if (stat := _stat(pid)) and stat[19] == started and stat[0] != "Z"
    }


def _wait_until_gone(processes: set[tuple[int, str]], timeout: float = 30) -> set[int]:
    deadline = time.monotonic() + timeout
    while _running(processes) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _running(processes)


def _children_named(stack: Stack) -> dict[str, int]:
    names = {}
    for pid in _descendants(stack.pid):
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        if _stat(pid)[1] == str(stack.pid):
            names["nginx" if command.startswith("nginx") else "granian"] = pid
    return names


def _app_server_workers(stack: Stack, app_server: int) -> set[tuple[int, str]]:
    """granian's workers now, as (pid, start time)."""
    return {
        (pid, _start_time(pid))
        for pid in _descendants(stack.pid)
        if (stat := _stat(pid)) and stat[1] == str(app_server)
    }


@pytest.fixture
def start_stack(tmp_path) -> Iterator:
    started: list[Stack] = []

    def start(**popen: object) -> Stack:
        popen.setdefault("stdout", subprocess.DEVNULL)
        popen.setdefault("stderr", subprocess.DEVNULL)
        # A session of its own: no terminal, and no signal meant for the tests' group.
        popen.setdefault("start_new_session", True)
        stack = Stack(tmp_path, **popen)
        started.append(stack)
        stack.wait_until_serving()
        return stack

    yield start
    for stack in started:
        stack.stop()


# --- signals and death -----------------------------------------------------------------------


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    ("signum", "popen"),
    [
        pytest.param(signal.SIGTERM, {}, id="SIGTERM"),
        pytest.param(signal.SIGINT, {}, id="SIGINT"),
        # A shell starts a background job with SIGINT ignored; `kill -INT` still stops it.
        pytest.param(signal.SIGINT, {"preexec_fn": _ignore_sigint}, id="SIGINT-background-job"),
    ],
)
def test_stack__stop_signal__both_stop_and_it_exits_0(start_stack, signum, popen):
    stack = start_stack(**popen)
    processes = stack.processes()
    assert set(_children_named(stack)) == {"nginx", "granian"}
    assert len(processes) >= 4  # each master and its worker(s)

    stack.process.send_signal(signum)

    assert stack.process.wait(timeout=30) == 0
    assert _wait_until_gone(processes) == set()


def test_stack__sighup__workers_replaced__still_serving__then_stops_clean(start_stack):
    stack = start_stack()
    masters = _children_named(stack)
    before = stack.processes()

    app_workers = _app_server_workers(stack, masters["granian"])

    stack.process.send_signal(signal.SIGHUP)

    # New workers for both masters (granian's replaced one by one); the masters, and the
    # stack, stay.
    deadline = time.monotonic() + 30
    while (
        not (stack.processes() - before)
        or _app_server_workers(stack, masters["granian"]) & app_workers
    ) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stack.processes() - before
    assert _app_server_workers(stack, masters["granian"])
    assert not _app_server_workers(stack, masters["granian"]) & app_workers
    assert stack.process.poll() is None
    assert _children_named(stack) == masters
    assert stack.get("/health") == (200, b'{"health":"GOOD"}')

    after = stack.processes()
    stack.process.send_signal(signal.SIGTERM)
    assert stack.process.wait(timeout=30) == 0
    assert _wait_until_gone(before | after) == set()


def test_stack__app_servers_socket__only_nginxs_workers_may_connect(start_stack):
    # Anyone else connecting could send the X-Real-IP it likes (client_address.py).
    stack = start_stack()
    socket_stat = (stack.run_dir / "app.sock").stat()
    nginx_workers = _descendants(_children_named(stack)["nginx"])
    owners = {Path(f"/proc/{pid}").stat().st_uid for pid in nginx_workers}

    assert stat_module.S_IMODE(socket_stat.st_mode) == 0o600
    assert owners == {socket_stat.st_uid}


def test_stack__killed__sigkill__no_child_left(start_stack):
    stack = start_stack()
    processes = stack.processes()

    stack.process.kill()
    stack.process.wait()

    # The kernel sends each child SIGTERM when the stack dies (PR_SET_PDEATHSIG).
    assert _wait_until_gone(processes) == set()


def test_stack__nginx_dies__granian_stopped_and_it_exits_1(start_stack):
    stack = start_stack()
    processes = stack.processes()

    os.kill(_children_named(stack)["nginx"], signal.SIGKILL)

    assert stack.process.wait(timeout=30) == 1
    assert _wait_until_gone(processes) == set()


def test_stack__granian_dies__started_again__still_serving__then_stops_clean(start_stack):
    # granian ends itself when a worker dies twice within 5.5 s; here it is killed outright,
    # and its orphaned workers, which hold the old socket, go too.
    stack = start_stack()
    granian = _children_named(stack)["granian"]
    old_workers = _app_server_workers(stack, granian)
    assert old_workers

    os.kill(granian, signal.SIGKILL)

    # The old workers (the stack's children once granian is gone) answer until the stack stops
    # them; then the new granian does.
    assert _wait_until_gone(old_workers) == set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if stack.get("/health")[0] == 200:
                break
        time.sleep(0.2)
    assert stack.process.poll() is None
    assert _children_named(stack).get("granian") not in (None, granian)
    assert stack.get("/health") == (200, b'{"health":"GOOD"}')

    processes = stack.processes()
    stack.process.send_signal(signal.SIGTERM)
    assert stack.process.wait(timeout=30) == 0
    assert _wait_until_gone(processes) == set()


def test_stack__its_terminal_closes__both_stop(start_stack):
    # A terminal closed under it: SIGHUP, and no controlling terminal any more.
    terminal, terminal_side = os.openpty()

    def session_on_the_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    output = bytearray()
    reading = threading.Event()

    def read_terminal() -> None:
        import select

        while not reading.is_set():
            if select.select([terminal], [], [], 0.1)[0]:
                with contextlib.suppress(OSError):
                    output.extend(os.read(terminal, 65536))

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        stack = start_stack(
            stdin=terminal_side,
            stdout=terminal_side,
            stderr=terminal_side,
            start_new_session=False,
            preexec_fn=session_on_the_terminal,
        )
    finally:
        os.close(terminal_side)
    processes = stack.processes()
    reading.set()
    reader.join()

    os.close(terminal)

    assert stack.process.wait(timeout=30) == 0
    assert _wait_until_gone(processes) == set()
    assert b"flagadmin.serving: nginx on" in output


# --- what nginx and granian refuse, under /api/ ------------------------------------------------


@pytest.fixture(scope="module")
def logged_stack(tmp_path_factory) -> Iterator[tuple[Stack, Path]]:
    """One stack for the requests below, its output (stdout and stderr) redirected as `>` does:
    a file opened for writing, truncated, without O_APPEND."""
    tmp_path = tmp_path_factory.mktemp("logged-stack")
    log = tmp_path / "stack.log"
    with log.open("wb") as output:
        stack = Stack(tmp_path, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        stack.wait_until_serving()
        yield stack, log
    finally:
        stack.stop()


def _request(line: bytes, *headers: bytes, body: bytes = b"") -> bytes:
    return b"\r\n".join([line, b"Host: 127.0.0.1", *headers, b"Connection: close", b"", body])


def _many_headers(count: int, size: int) -> list[bytes]:
    return [b"X-Filler-%d: %s" % (n, b"a" * size) for n in range(count)]


AUTHENTICATION_REQUIRED = (
    401,
    "AuthenticationRequired",
    "You must authenticate to use this API. Send an API token in the `Authorization` header "
    "(the whole header value is the token; a leading `Bearer ` is accepted).",
)


def _by_nginx(status: int) -> tuple[int, str, str]:
    return (400 if status == 494 else status, *PROXY_ERRORS[status])


@pytest.mark.parametrize(
    ("request_bytes", "expected"),
    [
        # A request line or headers nginx takes whole are the app's to answer (here 401),
        # where gunicorn's own smaller limits answered an HTML page.
        pytest.param(
            _request(b"GET /api/admin/projects?q=" + b"a" * 5000 + b" HTTP/1.1"),
            AUTHENTICATION_REQUIRED,
            id="request-line-5kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects?q=" + b"a" * 15000 + b" HTTP/1.1"),
            AUTHENTICATION_REQUIRED,
            id="request-line-15kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", *_many_headers(1, 10000)),
            AUTHENTICATION_REQUIRED,
            id="header-10kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", *_many_headers(3, 15000)),
            AUTHENTICATION_REQUIRED,
            id="headers-45kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", *_many_headers(90, 1)),
            AUTHENTICATION_REQUIRED,
            id="headers-90",
        ),
        # More than 100 header lines (nginx adds its own): granian's refusal, bodiless, gets
        # the error body from nginx.
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", *_many_headers(500, 1)),
            _by_nginx(431),
            id="headers-500",
        ),
        # Beyond nginx's buffers: nginx answers, with the error body.
        pytest.param(
            _request(b"GET /api/admin/projects?q=" + b"a" * 17000 + b" HTTP/1.1"),
            _by_nginx(414),
            id="request-line-17kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", *_many_headers(1, 17000)),
            _by_nginx(494),
            id="header-17kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", *_many_headers(5, 15000)),
            _by_nginx(494),
            id="headers-75kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", *_many_headers(8000, 1)),
            _by_nginx(494),
            id="headers-8000",
        ),
        pytest.param(
            _request(b"POST /api/admin/projects HTTP/1.1", b"Transfer-Encoding: gzip"),
            _by_nginx(501),
            id="transfer-encoding-gzip",
        ),
        pytest.param(
            _request(
                b"POST /api/admin/projects HTTP/1.1",
                b"Transfer-Encoding: gzip, chunked",
                body=b"0\r\n\r\n",
            ),
            _by_nginx(501),
            id="transfer-encoding-gzip-chunked",
        ),
        pytest.param(
            _request(
                b"POST /api/admin/projects HTTP/1.1",
                b"Transfer-Encoding: chunked",
                b"Content-Length: 5",
                body=b"0\r\n\r\n",
            ),
            _by_nginx(400),
            id="transfer-encoding-and-content-length",
        ),
        pytest.param(_request(b"GET /api/admin/projects HTTP/2.5"), _by_nginx(505), id="http-2.5"),
        # What granian would refuse with a bodiless 400, nginx refuses with the error body.
        pytest.param(_request(b"GET /api/admin/<script> HTTP/1.1"), _by_nginx(400), id="path-<"),
        pytest.param(
            _request(b'GET /api/admin/projects?query="x" HTTP/1.1'), _by_nginx(400), id='query-"'
        ),
        # Raw bytes that are UTF-8 are the app's to answer; others nginx refuses as granian would.
        pytest.param(
            _request(
                b"GET /api/admin/projects/caf\xc3\xa9?q=\xe2\x82\xac\xf0\x9f\x9a\x80 HTTP/1.1"
            ),
            AUTHENTICATION_REQUIRED,
            id="raw-utf8",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects/\xff HTTP/1.1"), _by_nginx(400), id="path-xff"
        ),
        pytest.param(
            _request(b"GET /api/admin/projects?query=\xc3\x28 HTTP/1.1"),
            _by_nginx(400),
            id="query-bad-utf8",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects/\xed\xa0\x80 HTTP/1.1"),
            _by_nginx(400),
            id="path-utf16-surrogate",
        ),
        # Bodies over the limit, sized by Content-Length (refused before the app server) and
        # chunked (found while nginx reads it for the app server).
        pytest.param(
            _request(
                b"POST /api/admin/projects HTTP/1.1",
                b"Content-Type: application/json",
                b"Content-Length: %d" % (MAX_BODY_BYTES + 1),
                body=b"x" * (MAX_BODY_BYTES + 1),
            ),
            _by_nginx(413),
            id="body-over-the-limit",
        ),
        pytest.param(
            _request(
                b"POST /api/admin/projects HTTP/1.1",
                b"Content-Type: application/json",
                b"Transfer-Encoding: chunked",
                body=b"%x\r\n%s\r\n0\r\n\r\n" % (MAX_BODY_BYTES + 1, b"x" * (MAX_BODY_BYTES + 1)),
            ),
            _by_nginx(413),
            id="chunked-body-over-the-limit",
        ),
        pytest.param(_request(b"GET /api/admin/projects NOT-HTTP"), _by_nginx(400), id="garbage"),
    ],
)
def test_stack__refused_under_api__the_apis_error_body(logged_stack, request_bytes, expected):
    stack, _ = logged_stack

    status, headers, body = stack.raw(request_bytes)

    assert headers["content-type"] == "application/json"
    error = json.loads(body)
    assert (status, error["name"], error["message"]) == expected
    assert set(error) == {"id", "name", "message"}
    assert len(error["id"].replace("-", "")) == 32


# --- the output ---------------------------------------------------------------------------


def _log_lines(log: Path, containing: str, expected: int, timeout: float = 10) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        lines = [line for line in log.read_text().splitlines() if containing in line]
        if len(lines) >= expected or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


def test_stack__output_redirected_with_truncation__every_access_log_line_kept(logged_stack):
    # nginx writes the access log, gunicorn the app's log line of each 401: two writers of one
    # file opened without O_APPEND, where one overwrote the other's lines.
    stack, log = logged_stack
    path = f"/api/admin/not-a-path-{time.monotonic_ns()}"

    statuses = {stack.get(path)[0] for _ in range(200)}

    assert statuses == {401}
    lines = _log_lines(log, f'"GET {path} HTTP/1.1" 401', expected=200)
    assert len(lines) == 200
    assert len(_log_lines(log, "AuthenticationRequired", expected=200)) >= 200


def test_stack__credentials__never_in_its_output(logged_stack):
    stack, log = logged_stack
    secret = "*:*." + "5ec7e7" * 10 + "abcd"
    marker = f"/health-{time.monotonic_ns()}"

    stack.get(f"/health?token={secret}&apiKey={secret}", Authorization=secret)
    stack.get(f"{marker}?token={secret}", Authorization=f"Bearer {secret}")

    assert _log_lines(log, f'"GET /health?{REDACTED} HTTP/1.1" 200', expected=1)
    assert _log_lines(log, f'"GET {marker}?{REDACTED} HTTP/1.1"', expected=1)
    written = log.read_text()
    assert secret not in written
    assert "5ec7e7" * 10 not in written
