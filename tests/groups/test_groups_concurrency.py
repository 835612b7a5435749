"""Concurrent writes of one group name: exactly one succeeds, the others 409, never a 500.

Real threads, each with its own database connection, through the whole stack.
"""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from flagadmin.core.models import AuditEvent, TokenType
from groups.models import Group
from tests.concurrency import concurrent_db, run_together
from tests.factories import GroupFactory, make_token

pytestmark = pytest.mark.usefixtures("seeded_rows_back_after_module")


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=token)
    return client


def _statuses(responses: list) -> list:
    return sorted(getattr(r, "status_code", repr(r)) for r in responses)


@concurrent_db
def test_create_group__concurrent_same_name__one_201_rest_409():
    token = make_token(TokenType.ADMIN, name="admin-tok")[1]

    def create(index: int):
        body = json.dumps({"name": "race", "description": f"attempt {index}"})
        return _client(token).post("/api/admin/groups", body, content_type="application/json")

    responses = run_together(4, create)

    assert _statuses(responses) == [201, 409, 409, 409], [
        getattr(r, "content", r) for r in responses
    ]
    assert Group.objects.filter(name="race").count() == 1
    assert AuditEvent.objects.filter(type="group-created").count() == 1


@concurrent_db
def test_update_group__concurrent_renames_to_one_name__one_200_rest_409():
    token = make_token(TokenType.ADMIN, name="admin-tok")[1]
    groups = [GroupFactory(name=f"before-{i}") for i in range(4)]

    def rename(index: int):
        return _client(token).put(
            f"/api/admin/groups/{groups[index].pk}",
            json.dumps({"name": "race"}),
            content_type="application/json",
        )

    responses = run_together(4, rename)

    assert _statuses(responses) == [200, 409, 409, 409], [
        getattr(r, "content", r) for r in responses
    ]
    assert Group.objects.filter(name="race").count() == 1
    assert Group.objects.filter(name__startswith="before-").count() == 3
