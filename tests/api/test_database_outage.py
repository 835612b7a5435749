"""A database that is down, frozen, timed out or locked: 503 ServiceUnavailableError in the one
error body, one log line without a traceback, never a 500 or a hang; /health unaffected."""

from __future__ import annotations

import logging
import sqlite3
import time
import uuid

import psycopg
import pytest
from django.db import InterfaceError, OperationalError, connection, connections
from rest_framework.test import APIClient

SERVICE_UNAVAILABLE = {
    "name": "ServiceUnavailableError",
    "message": "The service is busy or its database is unreachable. Try again shortly.",
}


def _django_error(django_class: type[Exception], cause: Exception):
    """What Django raises for a driver error: its own class, the driver's error as cause."""

    def raising(*args, **kwargs):
        try:
            raise cause
        except type(cause) as exc:
            raise django_class(*exc.args) from exc

    return raising


OUTAGES = [
    pytest.param(
        _django_error(OperationalError, psycopg.OperationalError("connection timeout expired")),
        id="connect-timeout",
    ),
    pytest.param(
        _django_error(
            OperationalError,
            psycopg.OperationalError(
                'connection to server at "10.0.0.5", port 5432 failed: Connection refused'
            ),
        ),
        id="connection-refused",
    ),
    pytest.param(
        _django_error(
            OperationalError,
            psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),
        ),
        id="statement-timeout",
    ),
    pytest.param(
        _django_error(
            OperationalError,
            psycopg.OperationalError("the database server did not answer within 3.5 s"),
        ),
        id="frozen-server",
    ),
    pytest.param(
        _django_error(InterfaceError, psycopg.InterfaceError("connection already closed")),
        id="connection-closed",
    ),
    pytest.param(
        _django_error(OperationalError, sqlite3.OperationalError("database is locked")),
        id="sqlite-locked",
    ),
]


def _assert_service_unavailable(response) -> None:
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    body = dict(response.json())
    uuid.UUID(body.pop("id"), version=4)
    assert body == SERVICE_UNAVAILABLE


@pytest.mark.parametrize("raising", OUTAGES)
def test_api__database_unavailable__503_and_one_log_line(
    admin_client, monkeypatch, caplog, raising
):
    caplog.set_level(logging.INFO)
    # Undone right after the request: the test database's own teardown needs a cursor.
    with monkeypatch.context() as patch:
        patch.setattr(connection, "cursor", raising)
        response = admin_client.get("/api/admin/projects")

    _assert_service_unavailable(response)
    assert "10.0.0.5" not in response.content.decode()
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) == 1, [r.getMessage() for r in records]
    assert records[0].name == "flagadmin.errors"
    assert records[0].levelno == logging.WARNING
    assert records[0].exc_info is None
    assert (
        records[0]
        .getMessage()
        .startswith(f"error {response.json()['id']}: ServiceUnavailableError (")
    )
    assert "\n" not in records[0].getMessage()


def test_api__a_bug_in_sqlite_is_still_a_500(admin_client, monkeypatch):
    raising = _django_error(OperationalError, sqlite3.OperationalError("no such table: x"))
    with monkeypatch.context() as patch:
        patch.setattr(connection, "cursor", raising)
        response = admin_client.get("/api/admin/projects")

    assert response.status_code == 500
    assert response.json()["name"] == "InternalError"


@pytest.mark.parametrize("raising", OUTAGES[:2])
def test_outside_drf__database_unavailable__503_error_body(db, monkeypatch, caplog, raising):
    # The session cookie makes the Django admin (no DRF view) read the session table, so the
    # failure escapes through Django's own handler, as in a middleware.
    client = APIClient(raise_request_exception=False)
    client.cookies["sessionid"] = "a" * 32
    caplog.set_level(logging.INFO)
    with monkeypatch.context() as patch:
        patch.setattr(connection, "cursor", raising)
        response = client.get("/admin/")

    _assert_service_unavailable(response)
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelno, r.exc_info) for r in records] == [
        ("flagadmin.errors", logging.WARNING, None)
    ]


def test_health__200_while_the_database_is_unavailable(anon_client, db, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(connection, "cursor", OUTAGES[0].values[0])
        response = anon_client.get("/health")

    assert response.status_code == 200
    assert response.json() == {"health": "GOOD"}


def test_ready__503_while_the_database_is_unavailable(anon_client, db, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(connection, "cursor", OUTAGES[0].values[0])
        response = anon_client.get("/ready")

    assert response.status_code == 503
    body = dict(response.json())
    uuid.UUID(body.pop("id"), version=4)
    assert body == {"name": "ServiceUnavailableError", "message": "The database is unreachable."}


# --- PostgreSQL: the timeouts really reach the server and the client ------------------------

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's timeouts"
)


@postgresql_only
def test_postgres__statement_timeout_is_set_on_the_connection(db):
    # The test settings' bound (tests/settings.py), as DB_STATEMENT_TIMEOUT set it.
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone() == ("10s",)


@postgresql_only
def test_postgres__a_server_that_does_not_answer__the_client_gives_up(db, settings):
    # A second connection, outside the test's transaction. A statement the server does not
    # cancel (its timeout off on this connection) stands for a frozen server: the client-side
    # bound ends the wait and closes the connection.
    settings.DB_STATEMENT_TIMEOUT = 0.1  # bound: 0.1 + 0.5 s
    wrapper = connections.create_connection("default")
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("SET statement_timeout = 0")
            with pytest.raises(OperationalError, match=r"did not answer within 0\.6 s"):
                cursor.execute("SELECT pg_sleep(2)")
        assert wrapper.connection.closed
        assert wrapper.is_usable() is False
    finally:
        wrapper.close()


@postgresql_only
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_postgres__health_check__a_connection_the_server_ended_is_replaced():
    # Between two requests the server ends the kept connection (a restart, an administrator).
    # Django checks a kept connection before a request's first query (CONN_HEALTH_CHECKS; the
    # test client skips that step, so it is called here as a request's start does): the
    # socket tells that the server has gone, and a new connection is opened.
    connection.ensure_connection()
    kept_pid = connection.connection.info.backend_pid
    assert connection.is_usable() is True

    with connections.create_connection("default").cursor() as other:
        other.execute("SELECT pg_terminate_backend(%s)", [kept_pid])
    deadline = time.monotonic() + 5
    while connection.is_usable() and time.monotonic() < deadline:
        time.sleep(0.01)  # the server's goodbye reaches the socket
    connection.health_check_done = False  # what the start of a request does

    with connection.cursor() as cursor:  # the request's first query
        cursor.execute("SELECT pg_backend_pid()")
        new_pid = cursor.fetchone()[0]

    assert new_pid != kept_pid
