"""The Host header: probes answer whatever it is; a host outside ALLOWED_HOSTS gets the error
body under /api/ and a plain 400 elsewhere, with one warning line and no traceback."""

from __future__ import annotations

import logging

import pytest

from tests.conftest import assert_error

pytestmark = pytest.mark.django_db

BAD_HOSTS = [
    pytest.param("10.1.2.3", id="ip-address"),
    pytest.param("10.1.2.3:8000", id="ip-address-and-port"),
    pytest.param("evil.example.com", id="other-name"),
    pytest.param("bad host!", id="malformed"),
]


@pytest.mark.parametrize("host", BAD_HOSTS)
@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param("/health", {"health": "GOOD"}, id="health"),
        pytest.param("/ready", {"health": "READY"}, id="ready"),
    ],
)
def test_probe__any_host__answers(anon_client, caplog, host, path, body):
    response = anon_client.get(path, HTTP_HOST=host)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == body
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("host", BAD_HOSTS)
@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/api/admin/projects", id="known-api-path"),
        pytest.param("/api/admin/nope", id="unknown-api-path"),
        pytest.param("/api", id="api-root"),
    ],
)
def test_api_path__disallowed_host__400_error_body_one_warning(admin_client, caplog, host, path):
    caplog.set_level(logging.INFO)

    response = admin_client.get(path, HTTP_HOST=host)

    error = assert_error(response, 400, "ValidationError")
    message = (
        "The `/headers/host` property names a host this server does not answer to. "
        f'You sent "{host}".'
    )
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": message,
        "details": [{"path": "/headers/host", "message": message}],
    }
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "flagadmin.hosts",
            "WARNING",
            f"error {error['id']}: refused Host {host!r} (not in ALLOWED_HOSTS) for GET {path!r}",
        )
    ]
    assert not any(r.exc_info for r in caplog.records)


@pytest.mark.parametrize("path", ["/admin/login/", "/docs/", "/auth/saml/login", "/nowhere"])
def test_other_path__disallowed_host__plain_400_one_warning(anon_client, caplog, path):
    caplog.set_level(logging.INFO)

    response = anon_client.get(path, HTTP_HOST="10.1.2.3")

    assert response.status_code == 400
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response.content == b"<h1>Bad Request (400)</h1>"
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "flagadmin.hosts",
            "WARNING",
            f"error -: refused Host '10.1.2.3' (not in ALLOWED_HOSTS) for GET {path!r}",
        )
    ]


def test_long_host__shown_shortened(anon_client, caplog):
    host = "a" * 5000 + ".example.com"

    response = anon_client.get("/api/admin/projects", HTTP_HOST=host)

    error = assert_error(response, 400, "ValidationError")
    assert error["message"].endswith(f'You sent "{"a" * 100}…".')
    assert len(caplog.records[-1].getMessage()) < 400


def test_allowed_host__served_as_before(admin_client):
    response = admin_client.get("/api/admin/projects", HTTP_HOST="localhost")

    assert response.status_code == 200
