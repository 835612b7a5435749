"""Fixtures: an API client per kind of principal (anonymous, admin token, client token,
Viewer/Editor/Admin personal tokens)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from flagadmin.core import times
from flagadmin.core.models import Role, TokenType
from tests.factories import UserFactory, make_token


def _client_with(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=token)
    return client


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


@pytest.fixture
def admin_token(db) -> str:
    return make_token(TokenType.ADMIN, name="admin-tok")[1]


@pytest.fixture
def admin_client(admin_token) -> APIClient:
    return _client_with(admin_token)


@pytest.fixture
def client_token_client(db) -> APIClient:
    return _client_with(make_token(TokenType.CLIENT, projects=["default"])[1])


def _personal_client(role_id: int) -> APIClient:
    user = UserFactory(root_role_id=role_id)
    client = _client_with(make_token(TokenType.PERSONAL, user=user)[1])
    client.user = user
    return client


@pytest.fixture
def viewer_client(db) -> APIClient:
    """A Viewer's personal access token; `.user` is the user."""
    return _personal_client(Role.VIEWER)


@pytest.fixture
def editor_client(db) -> APIClient:
    """An Editor's personal access token; `.user` is the user."""
    return _personal_client(Role.EDITOR)


@pytest.fixture
def admin_user_client(db) -> APIClient:
    """An Admin's personal access token; `.user` is the user."""
    return _personal_client(Role.ADMIN)


def assert_error(response, status: int, name: str) -> dict:
    """The contract's error body: status, JSON, a UUID id, the name and a message."""
    import uuid

    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["name"] == name
    assert isinstance(body["message"], str)
    assert body["message"]
    uuid.UUID(body["id"], version=4)
    return body


@pytest.fixture(scope="module")
def seeded_rows_back_after_module(django_db_setup, django_db_blocker):
    """`transaction=True` tests end with a flush that empties every table, seeded rows (roles,
    system users, the default project, the `simple` tag type) included. Tests that run after
    a module using it expect those rows, so they are put back once the module is done."""
    yield
    with django_db_blocker.unblock():
        serialized = getattr(connection, "_test_serialized_contents", None)
        if serialized:
            connection.creation.deserialize_db_from_string(serialized)


@pytest.fixture(autouse=True)
def fresh_caches():
    """Each test starts without what the workers keep in memory between requests (every
    `flagadmin.core.caches.BoundedCache`: client payload bodies, token lookups, last_seen
    writes, engines, the playground's reasons, the projects list's entries): a rolled-back
    test's rows are gone, and on SQLite its audit event ids are given out again, so a kept
    engine could look current."""
    from flagadmin.core.caches import clear_all

    clear_all()
    yield
    clear_all()


class Clock:
    """`flagadmin.core.times.now`, stopped where the test began and moved only by `advance`."""

    def __init__(self) -> None:
        self.at = timezone.now()

    def now(self) -> datetime:
        return self.at

    def advance(self, *, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """The code's clock (`times.now()`), moved by the test instead of waiting for time to pass."""
    stopped = Clock()
    monkeypatch.setattr(times, "now", stopped.now)
    return stopped
