"""The production stack's generated nginx configuration (flagadmin.serving); the stack itself
under slow clients and database faults is exercised by bench/faults.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from flagadmin.client_address import ClientAddressFromLocalProxyMiddleware
from flagadmin.serving import MAX_BODY_BYTES, PROXY_ERRORS, gunicorn_command, nginx_config


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
