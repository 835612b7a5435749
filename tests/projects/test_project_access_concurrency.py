"""Concurrent identical POST /api/admin/projects/:id/access: the right rows, and one audit
event per actual change (the insert that adds rows decides whether an event is written).

Real threads, each with its own database connection, through the whole stack."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from flagadmin.core.models import AuditEvent, Role, TokenType
from projects.models import ProjectRoleAssignment
from tests.concurrency import concurrent_db, run_together
from tests.factories import GroupFactory, ProjectFactory, UserFactory, make_token

pytestmark = pytest.mark.usefixtures("seeded_rows_back_after_module")


@concurrent_db
def test_add_access__20_identical_concurrent_calls__rows_once_one_event():
    token = make_token(TokenType.ADMIN, name="admin-tok")[1]
    project = ProjectFactory(id="team", name="Team")
    users = [UserFactory() for _ in range(3)]
    group = GroupFactory()
    body = json.dumps(
        {
            "roles": [Role.OWNER, Role.MEMBER],
            "users": [user.pk for user in users],
            "groups": [group.pk],
        }
    )

    def add(index: int):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        return client.post("/api/admin/projects/team/access", body, content_type="application/json")

    responses = run_together(20, add)

    assert [getattr(r, "status_code", repr(r)) for r in responses] == [200] * 20
    wanted = {(role, user.pk, None) for role in (Role.OWNER, Role.MEMBER) for user in users} | {
        (Role.OWNER, None, group.pk),
        (Role.MEMBER, None, group.pk),
    }
    rows = list(
        ProjectRoleAssignment.objects.filter(project=project).values_list(
            "role_id", "user_id", "group_id"
        )
    )
    assert sorted(rows, key=str) == sorted(wanted, key=str)
    events = list(AuditEvent.objects.filter(type="project-access-added"))
    assert len(events) == 1
    assert events[0].project == "team"
    assert events[0].data == {
        "roles": [Role.OWNER, Role.MEMBER],
        "users": sorted(user.pk for user in users),
        "groups": [group.pk],
    }
