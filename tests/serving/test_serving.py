"""The production stack's generated nginx configuration (flagadmin.serving); the stack itself
under slow clients and database faults is exercised by bench/faults.py."""

from __future__ import annotations

import contextlib
import gzip
import http.client
import http.server
import json
import re
import shutil
import signal
import socket as socketlib
import socketserver
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from gunicorn.config import Config

from flagadmin.serving.client_address import ClientAddressFromLocalProxyMiddleware
from flagadmin.serving.stack import (
    HEADER_BUFFER_BYTES,
    HEADER_BUFFERS,
    MAX_BODY_BYTES,
    PROXY_ERRORS,
    gunicorn_command,
    nginx_config,
    redact,
)


def _config(run_dir: Path) -> str:
    return nginx_config(
        listen="127.0.0.1:8000",
        upstream_socket=run_dir / "gunicorn.sock",
        run_dir=run_dir,
        header_timeout=10,
        body_timeout=12,
        max_conn_per_client=100,
        access_log=False,
    )


def test_nginx_config__bounds_slow_clients_and_buffers_requests(tmp_path):
    config = _config(tmp_path)

    for directive in [
        "client_header_timeout 10s;",
        "client_body_timeout 12s;",
        "limit_conn per_client 100;",
        "limit_conn_status 429;",
        "proxy_request_buffering on;",
        f"server unix:{tmp_path}/gunicorn.sock max_fails=0;",
        "listen 127.0.0.1:8000 backlog=4096;",
    ]:
        assert directive in config


def test_nginx_config__its_own_errors_use_the_error_body(tmp_path):
    bodies = re.findall(r"return (\d+) '(.*)';", _config(tmp_path))

    assert [int(code) for code, _ in bodies] == list(PROXY_ERRORS)
    for code, body in bodies:
        parsed = json.loads(body.replace("$request_id", "0" * 32))
        assert parsed == {
            "id": "0" * 32,
            "name": PROXY_ERRORS[int(code)][0],
            "message": PROXY_ERRORS[int(code)][1],
        }


@pytest.mark.skipif(shutil.which("nginx", path="/usr/sbin:/usr/bin") is None, reason="no nginx")
def test_nginx_config__nginx_accepts_it(tmp_path):
    config = tmp_path / "nginx.conf"
    config.write_text(_config(tmp_path))
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/bin")

    checked = subprocess.run(
        [nginx, "-t", "-e", "stderr", "-p", str(tmp_path), "-c", str(config)],
        capture_output=True,
        text=True,
    )

    assert checked.returncode == 0, checked.stderr


def test_gunicorn_command__gthread_workers_on_the_socket(tmp_path):
    command = gunicorn_command(tmp_path / "g.sock", workers=2, threads=8)

    assert command[1:6] == [
        "flagadmin.wsgi:application",
        "--bind",
        f"unix:{tmp_path}/g.sock",
        "--workers",
        "2",
    ]
    assert command[command.index("--worker-class") + 1] == "gthread"
    assert command[command.index("--threads") + 1] == "8"


def test_gunicorn_command__no_access_log_of_its_own(tmp_path):
    # nginx writes the access log; one from gunicorn, even to /dev/null, is formatted line by
    # line on every request.
    parsed = Config().parser().parse_args(gunicorn_command(tmp_path / "g.sock", 2, 8)[1:])

    assert parsed.accesslog is None


def test_gunicorn_command__takes_every_request_line_and_header_nginx_passes(tmp_path):
    # nginx refuses longer ones with the error body; gunicorn's lower defaults answered HTML.
    parsed = Config().parser().parse_args(gunicorn_command(tmp_path / "g.sock", 2, 8)[1:])

    assert parsed.limit_request_line == 0  # no limit
    assert parsed.limit_request_field_size >= HEADER_BUFFERS * HEADER_BUFFER_BYTES
    assert parsed.limit_request_fields == 32768  # gunicorn's most; nginx's 64 kB hold fewer


def test_nginx_config__header_buffers(tmp_path):
    assert "large_client_header_buffers 4 16k;" in _config(tmp_path)
    assert HEADER_BUFFERS * HEADER_BUFFER_BYTES == 64 * 1024


def test_nginx_config__access_log_without_query_strings_or_headers(tmp_path):
    config = _config(tmp_path)
    log_format = re.search(r"log_format main (.*);", config).group(1)

    assert (
        log_format == "'$remote_addr \"$request_redacted\" $status $body_bytes_sent $request_time'"
    )
    assert '"${path}?[redacted]${rest}";' in config


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            b'127.0.0.1 "GET /api/client/features?token=abc&project=x HTTP/1.1" 200 12 0.001\n',
            b'127.0.0.1 "GET /api/client/features?[redacted] HTTP/1.1" 200 12 0.001\n',
            id="access-log",
        ),
        pytest.param(
            b"2026/01/01 10:00:00 [error] 7#7: *1 connect() failed, client: 127.0.0.1, "
            b'request: "GET /api/x?apiKey=s3cret HTTP/1.1", '
            b'upstream: "http://unix:/tmp/f/gunicorn.sock:/api/x?apiKey=s3cret", host: "h"\n',
            b"2026/01/01 10:00:00 [error] 7#7: *1 connect() failed, client: 127.0.0.1, "
            b'request: "GET /api/x?[redacted] HTTP/1.1", '
            b'upstream: "http://unix:/tmp/f/gunicorn.sock:/api/x?[redacted]", host: "h"\n',
            id="nginx-error-log",
        ),
        pytest.param(
            b"[ERROR] Error handling request GET /api/admin/projects?secret=1\n",
            b"[ERROR] Error handling request GET /api/admin/projects?[redacted]\n",
            id="gunicorn-error",
        ),
        pytest.param(
            b"token *:*." + b"9a" * 32 + b" and default:development." + b"0f" * 32 + b"\n",
            b"token *:*.[redacted] and default:development.[redacted]\n",
            id="token-secrets",
        ),
        pytest.param(
            b"Personal token user:" + b"ab" * 32 + b"\n",
            b"Personal token user:[redacted]\n",
            id="personal-token",
        ),
        pytest.param(
            b"[INFO] Booting worker with pid: 30056. What? Nothing to hide here.\n",
            b"[INFO] Booting worker with pid: 30056. What? Nothing to hide here.\n",
            id="nothing-to-redact",
        ),
    ],
)
def test_redact__query_strings_and_token_secrets(line, expected):
    assert redact(line) == expected


@pytest.mark.parametrize(
    ("remote_addr", "real_ip", "expected"),
    [
        pytest.param("", "203.0.113.7", "203.0.113.7", id="unix-socket-peer-nginx-address"),
        pytest.param("", "", "", id="unix-socket-peer-no-header"),
        pytest.param("198.51.100.2", "203.0.113.7", "198.51.100.2", id="tcp-peer-header-ignored"),
    ],
)
def test_client_address__from_nginx_only_on_the_unix_socket(
    settings, remote_addr, real_ip, expected
):
    settings.CLIENT_ADDRESS_FROM_LOCAL_PROXY = True
    seen = {}

    def view(request):
        seen["address"] = request.META["REMOTE_ADDR"]
        return HttpResponse()

    request = RequestFactory().get("/health", REMOTE_ADDR=remote_addr, HTTP_X_REAL_IP=real_ip)
    ClientAddressFromLocalProxyMiddleware(view)(request)

    assert seen == {"address": expected}


def test_client_address__not_started_by_the_stack__header_ignored(settings):
    settings.CLIENT_ADDRESS_FROM_LOCAL_PROXY = False
    seen = {}

    def view(request):
        seen["address"] = request.META["REMOTE_ADDR"]
        return HttpResponse()

    request = RequestFactory().get("/health", REMOTE_ADDR="", HTTP_X_REAL_IP="203.0.113.7")
    ClientAddressFromLocalProxyMiddleware(view)(request)

    assert seen == {"address": ""}


def test_nginx_config__passes_the_client_address(tmp_path):
    assert "proxy_set_header X-Real-IP $remote_addr;" in _config(tmp_path)


def test_nginx_config__the_apps_body_limit(tmp_path, settings):
    config = _config(tmp_path)

    assert MAX_BODY_BYTES == settings.MAX_REQUEST_BODY_BYTES
    assert f"client_max_body_size {settings.MAX_REQUEST_BODY_BYTES};" in config


class _Upstream(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Stands in for gunicorn on the stack's socket: answers every GET with `body` as JSON
    and a strong ETag, and TRACE as the app answers a method a path does not take (405,
    `Allow`, the error body); records the methods it received."""

    daemon_threads = True
    body = b""
    methods: list[str]


METHOD_NOT_ALLOWED = json.dumps(
    {"id": "1", "name": "MethodNotAllowedError", "message": "TRACE is not allowed on this path."}
).encode()


class _UpstreamHandler(http.server.BaseHTTPRequestHandler):
    def do_TRACE(self) -> None:
        self.server.methods.append(self.command)
        self.send_response(405)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(METHOD_NOT_ALLOWED)))
        self.send_header("Allow", "GET, POST, HEAD, OPTIONS")
        self.end_headers()
        self.wfile.write(METHOD_NOT_ALLOWED)

    def do_GET(self) -> None:
        self.server.methods.append(self.command)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.send_header("ETag", '"q:c"')
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args) -> None:  # a Unix socket's peer has no address to log
        pass


@pytest.fixture
def nginx_in_front_of(tmp_path):
    """Starts the stack's nginx, as generated, in front of an `_Upstream` serving `body`;
    yields a function that makes one request (GET unless told) through nginx and returns
    (status, headers, body); its `upstream` is the `_Upstream`."""
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/bin")
    if nginx is None:
        pytest.skip("no nginx")
    # As flagadmin.serving: nginx's workers run as another user under root and must reach it.
    run_dir = Path(tempfile.mkdtemp(prefix="flagadmin-test-stack-"))
    run_dir.chmod(0o711)
    socket = run_dir / "gunicorn.sock"
    upstream = _Upstream(str(socket), _UpstreamHandler)
    upstream.methods = []
    socket.chmod(0o777)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    with contextlib.closing(socketlib.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = run_dir / "nginx.conf"
    conf.write_text(
        nginx_config(
            listen=f"127.0.0.1:{port}",
            upstream_socket=socket,
            run_dir=run_dir,
            header_timeout=10,
            body_timeout=10,
            max_conn_per_client=100,
            access_log=False,
        )
    )
    proxy = subprocess.Popen([nginx, "-e", "stderr", "-p", str(run_dir), "-c", str(conf)])

    def get(body: bytes, method: str = "GET", **headers: str) -> tuple[int, dict[str, str], bytes]:
        upstream.body = body
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            connection.request(method, "/api/admin/projects/default/features", headers=headers)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    get.upstream = upstream

    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socketlib.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proxy.poll() is None, "nginx exited"
                assert time.monotonic() < deadline, "nginx did not listen in 10 s"
                time.sleep(0.05)
        yield get
    finally:
        proxy.send_signal(signal.SIGQUIT)
        proxy.wait(timeout=10)
        upstream.shutdown()
        upstream.server_close()
        shutil.rmtree(run_dir, ignore_errors=True)


LARGE_JSON = json.dumps({"features": [{"name": f"flag-{n}"} for n in range(2000)]}).encode()


def test_stack__client_accepts_gzip__json_compressed_and_etag_weak(nginx_in_front_of):
    status, headers, body = nginx_in_front_of(LARGE_JSON, **{"Accept-Encoding": "gzip"})

    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert headers["Vary"] == "Accept-Encoding"
    # nginx weakens the ETag of what it compresses; the client API compares weakly.
    assert headers["ETag"] == 'W/"q:c"'
    assert len(body) < len(LARGE_JSON) / 5
    assert gzip.decompress(body) == LARGE_JSON


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        pytest.param(LARGE_JSON, {}, id="client-does-not-ask"),
        pytest.param(b'{"health":"GOOD"}', {"Accept-Encoding": "gzip"}, id="small-body"),
    ],
)
def test_stack__no_gzip__body_and_etag_as_the_app_sent_them(nginx_in_front_of, body, headers):
    status, received_headers, received = nginx_in_front_of(body, **headers)

    assert status == 200
    assert "Content-Encoding" not in received_headers
    assert received_headers["ETag"] == '"q:c"'
    assert received == body


def test_stack__trace_answered_by_the_app_with_allow(nginx_in_front_of):
    # nginx refuses TRACE itself with an HTML page and no `Allow`; the stack hands it on.
    status, headers, body = nginx_in_front_of(b"", method="TRACE")

    assert status == 405
    assert headers["Allow"] == "GET, POST, HEAD, OPTIONS"
    assert headers["Content-Type"] == "application/json"
    assert body == METHOD_NOT_ALLOWED
    assert nginx_in_front_of.upstream.methods == ["TRACE"]
