"""GET /health (liveness) and GET /ready (database check)."""

from __future__ import annotations

from django.db import OperationalError, connection

from tests.conftest import assert_error


def test_health__200_without_credentials_or_database(anon_client):
    # No `db` fixture: any query here would fail the test.
    response = anon_client.get("/health")

    assert response.status_code == 200
    assert response.json() == {"health": "GOOD"}


def test_health__ignores_a_bad_token(anon_client):
    anon_client.credentials(HTTP_AUTHORIZATION="*:*.wrong")

    assert anon_client.get("/health").status_code == 200


def test_health__wrong_method__405_error_body(anon_client):
    assert_error(anon_client.post("/health"), 405, "MethodNotAllowedError")


def test_ready__200_when_the_database_answers(anon_client, db):
    response = anon_client.get("/ready")

    assert response.status_code == 200
    assert response.json() == {"health": "READY"}


def test_ready__503_error_body_when_the_database_is_unreachable(anon_client, db, monkeypatch):
    def unreachable(*args, **kwargs):
        raise OperationalError(
            'connection to server at "10.0.0.5", port 5432 failed: password authentication '
            'failed for user "flagadmin"'
        )

    # Undone right after the request: the test database's own teardown needs a cursor.
    with monkeypatch.context() as patch:
        patch.setattr(connection, "cursor", unreachable)
        response = anon_client.get("/ready")

    body = assert_error(response, 503, "ServiceUnavailableError")
    assert body["message"] == "The database is unreachable."
    assert "10.0.0.5" not in response.content.decode()
    assert "password" not in response.content.decode()
