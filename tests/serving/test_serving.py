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

from flagadmin.serving.app_environ import EnvironAsNginxSentIt
from flagadmin.serving.client_address import ClientAddressFromLocalProxyMiddleware
from flagadmin.serving.stack import (
    APP_ERRORS,
    HEADER_BUFFER_BYTES,
    HEADER_BUFFERS,
    MAX_BODY_BYTES,
    PROXY_ERRORS,
    URI_REFUSED_BY_THE_APP_SERVER,
    app_server_command,
    nginx_config,
    redact,
)


def _config(run_dir: Path) -> str:
    return nginx_config(
        listen="127.0.0.1:8000",
        upstream_socket=run_dir / "app.sock",
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
        f"server unix:{tmp_path}/app.sock max_fails=0;",
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


def test_app_server_command__granian_workers_on_the_socket(tmp_path):
    command = app_server_command(tmp_path / "app.sock", workers=2, threads=8)

    assert command[1:] == [
        "-m",
        "flagadmin.serving.app_server",
        "--uds",
        f"{tmp_path}/app.sock",
        "--workers",
        "2",
        "--threads",
        "8",
        "--graceful-timeout",
        "20",
    ]


# Every status the app answers with behind the stack's nginx (flagadmin/api/errors.py, Django's,
# the views'). Its 413 is for a body over MAX_REQUEST_BODY_BYTES, which nginx refuses first
# (test_nginx_config__the_apps_body_limit holds the two limits equal).
APP_STATUSES = {200, 201, 202, 204, 302, 304, 400, 401, 403, 404, 405, 409, 411, 415, 429, 500, 503}


def test_nginx_config__the_apps_answers_pass_untouched(tmp_path):
    # Answers are taken over only for the statuses of APP_ERRORS, and only where the app is
    # proxied: the server's error pages stay those of nginx's own refusals.
    config = _config(tmp_path)
    app = config[config.index("location @app {") :]
    app = app[: app.index("}")]

    assert "proxy_intercept_errors on;" in app
    assert re.findall(r"error_page (\d+) /__proxy_error/\1;", app) == [
        str(code) for code in APP_ERRORS
    ]
    assert not set(APP_ERRORS) & APP_STATUSES
    assert set(APP_ERRORS) <= set(PROXY_ERRORS)
    assert config.count("proxy_intercept_errors") == 1


def test_nginx_config__nginx_closes_idle_app_server_connections_first(tmp_path):
    # granian closes a kept-alive connection idle for 30 s.
    config = _config(tmp_path)
    upstream = config[config.index("upstream flagadmin {") :]

    assert "keepalive_timeout 20s;" in upstream[: upstream.index("}")]


def test_nginx_config__no_proxy_header_reaches_the_app(tmp_path):
    assert 'proxy_set_header Proxy "";' in _config(tmp_path)


@pytest.mark.parametrize(
    ("target", "refused"),
    [
        ("/api/admin/projects", False),
        ("/api/admin/projects?query=%22x%22&tag=a%3Cb", False),
        ('/api/a"b/features', False),  # granian takes `"` in a path
        ("/api/a{b}|c^d", False),
        ("/api/admin/<script>", True),
        ("/api/admin/a>b", True),
        ("/api/admin/a`b", True),
        ('/api/admin/projects?query="x"', True),
        ("/api/admin/projects?query=<script>", True),
        ("/api/admin/projects?query=a>b", True),
    ],
)
def test_nginx_config__targets_granian_refuses__refused_by_nginx(target, refused):
    # nginx's PCRE and Python's re agree on this pattern.
    assert bool(re.search(URI_REFUSED_BY_THE_APP_SERVER, target)) is refused


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


def _environ_seen_by_the_app(process: dict[str, str], environ: dict[str, str]) -> dict:
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        return []

    EnvironAsNginxSentIt(app, process)(environ, None)
    return seen


def test_app_server__process_environment__left_out_of_each_request():
    # granian starts each environ from the process's environment (the settings, with secrets).
    process = {"SECRET_KEY": "s3cret", "DATABASE_URL": "postgres://u:pw@h/db", "HTTP_PROXY": "x"}
    request = {"REQUEST_METHOD": "GET", "PATH_INFO": "/", "HTTP_HOST": "h"}

    assert _environ_seen_by_the_app(process, {**process, **request}) == request


def test_app_server__process_environment__a_requests_own_header_kept():
    # A `Proxy` header (HTTP_PROXY) sent by the client is the request's, not the process's.
    request = {"REQUEST_METHOD": "GET", "HTTP_PROXY": "from-the-client"}

    assert _environ_seen_by_the_app({"HTTP_PROXY": "x"}, request) == request


def test_app_server__the_path_as_sent__from_nginx():
    request = {"PATH_INFO": "/api/admin/projects/a/", "HTTP_X_REQUEST_URI": "/api/a%2F?q=1"}

    assert _environ_seen_by_the_app({}, request) == {
        "PATH_INFO": "/api/admin/projects/a/",
        "REQUEST_URI": "/api/a%2F?q=1",
    }


def test_nginx_config__the_path_as_sent_to_the_app_server(tmp_path):
    # Set on every request, so that a client's own X-Request-URI never reaches the app.
    assert "proxy_set_header X-Request-URI $request_uri;" in _config(tmp_path)
