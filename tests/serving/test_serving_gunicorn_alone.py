"""`gunicorn flagadmin.wsgi` alone (behind another proxy, scripts/serve --dev): gunicorn's own
refusals are answered with the API's error body, not its HTML page, and its logs hold no
credential (flagadmin/serving/gunicorn_hooks.py, installed by gunicorn.conf.py)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flagadmin.serving.gunicorn_hooks import error_body
from flagadmin.serving.stack import PROXY_ERRORS, REDACTED
from tests.serving.test_serving_stack import _request, _stack_environment

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gunicorn_alone(tmp_path_factory) -> Iterator[tuple[int, Path]]:
    """gunicorn started as `gunicorn flagadmin.wsgi` from the project folder (which reads
    gunicorn.conf.py), with its access log, as scripts/serve --dev does; its port and log."""
    tmp_path = tmp_path_factory.mktemp("gunicorn-alone")
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "flagadmin.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--access-logfile",
                "-",
            ],
            cwd=REPO_ROOT,
            env=_stack_environment(tmp_path),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            assert time.monotonic() < deadline, "gunicorn did not listen in 60 s"
            time.sleep(0.1)
        yield port, log
    finally:
        process.terminate()
        process.wait(timeout=30)


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in header_lines)
    }
    return int(status_line.split()[1]), headers, body


TOO_LONG = PROXY_ERRORS[494]
MALFORMED = PROXY_ERRORS[400]
UNKNOWN_CODING = (
    "ValidationError",
    "This Transfer-Encoding is not supported: send the body with Content-Length.",
)


@pytest.mark.parametrize(
    ("request_bytes", "expected"),
    [
        pytest.param(
            _request(b"GET /api/admin/projects?q=" + b"a" * 5000 + b" HTTP/1.1"),
            (400, *TOO_LONG),
            id="request-line-5kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", b"X-Big: " + b"a" * 10000),
            (431, *TOO_LONG),
            id="header-10kB",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/1.1", *(b"X-H%d: v" % n for n in range(200))),
            (431, *TOO_LONG),
            id="headers-200",
        ),
        pytest.param(
            _request(b"GET /api/admin/projects HTTP/9.9"), (400, *MALFORMED), id="http-9.9"
        ),
        pytest.param(b"HELLO\r\n\r\n", (400, *MALFORMED), id="garbage"),
        # A coding gunicorn does not know; gzip it passes on, and the app refuses (501).
        pytest.param(
            _request(b"POST /api/admin/projects HTTP/1.1", b"Transfer-Encoding: x-unknown"),
            (501, *UNKNOWN_CODING),
            id="transfer-encoding-unknown",
        ),
    ],
)
def test_gunicorn_alone__refusals__the_apis_error_body(gunicorn_alone, request_bytes, expected):
    port, _ = gunicorn_alone

    status, headers, body = _raw(port, request_bytes)

    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    error = json.loads(body)
    assert (status, error["name"], error["message"]) == expected
    assert set(error) == {"id", "name", "message"}


def test_gunicorn_alone__refusal__status_line_with_its_own_reason(gunicorn_alone):
    port, _ = gunicorn_alone
    request = _request(b"POST /api/admin/projects HTTP/1.1", b"Transfer-Encoding: x-unknown")

    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        status_line = connection.makefile("rb").readline()

    assert status_line == b"HTTP/1.1 501 Not Implemented\r\n"


def test_gunicorn_alone__credentials__not_in_its_logs(gunicorn_alone):
    port, log = gunicorn_alone
    secret = "*:*." + "ab12" * 16

    _raw(port, _request(f"GET /health?token={secret} HTTP/1.1".encode()))
    # Refused (no HTTP version), and quoted in gunicorn's warning.
    assert _raw(port, f"GET /health?token={secret}\r\n\r\n".encode())[0] == 400

    deadline = time.monotonic() + 10
    while f'"GET /health?{REDACTED} HTTP/1.1" 200' not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    assert f"Invalid HTTP request line: 'GET /health?{REDACTED}'" in log.read_text()
    assert "ab12" * 16 not in log.read_text()


@pytest.mark.parametrize(
    ("status", "reason", "detail", "expected"),
    [
        pytest.param(400, "Bad Request", "Request Line is too large (5035 > 4094)", TOO_LONG),
        pytest.param(400, "Bad Request", "Invalid HTTP request line: 'GET /?t=x'", MALFORMED),
        pytest.param(431, "Request Header Fields Too Large", "Error parsing headers", TOO_LONG),
        pytest.param(501, "Not Implemented", "Unsupported transfer coding", UNKNOWN_CODING),
        pytest.param(500, "Internal Server Error", "", PROXY_ERRORS[500]),
        pytest.param(418, "I'm a Teapot", "", ("ValidationError", "I'm a Teapot.")),
    ],
)
def test_error_body__by_status__never_gunicorns_detail(status, reason, detail, expected):
    body = json.loads(error_body(status, reason, detail))

    assert (body["name"], body["message"]) == expected
    assert len(body["id"]) == 36


def test_apps_own_log_lines__credentials_redacted(admin_client, caplog):
    # A client that sends its token in a path: the app's error line quotes the path. gunicorn
    # alone writes the app's lines as they are; the console handler redacts them.
    secret = "*:*." + "c0ffee" * 10 + "abcd"
    caplog.set_level(logging.INFO)  # as served (the tests' settings log warnings only)
    [console] = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
    written = io.StringIO()
    stream = console.setStream(written)
    try:
        response = admin_client.get(f"/api/admin/projects/{secret}?token={secret}")
    finally:
        console.setStream(stream)

    assert response.status_code == 404
    assert "NotFoundError Project with id *:*.[redacted] does not exist" in written.getvalue()
    assert "c0ffee" * 10 not in written.getvalue()
