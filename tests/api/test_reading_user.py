"""GET /api/admin/user (Unleash 8.2's getMe)."""

from __future__ import annotations

from datetime import UTC, datetime

from flagadmin.core.models import Role
from tests.conftest import _client_with, assert_error
from tests.factories import (
    GroupFactory,
    GroupMembershipFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
    make_token,
)

URL = "/api/admin/user"


def test_me__admin_token__the_token_as_unleash_describes_it_without_its_secret(admin_client):
    """Unleash 8.2 answers `secret` too: the whole token, echoed back. Never here."""
    response = admin_client.get(URL)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "user": {
            "username": "admin-tok",
            "permissions": ["ADMIN"],
            "environment": "*",
            "type": "admin",
            "projects": ["*"],
            "internalAdminTokenUserId": -42,
        },
        "permissions": [{"permission": "ADMIN"}],
        "feedback": [],
        "splash": {},
    }


def test_me__personal_token__the_user_with_root_and_project_permissions(db):
    created = datetime(2026, 2, 1, 9, 30, tzinfo=UTC)
    user = UserFactory(
        name="Ada",
        email="ada@example.com",
        username="ada",
        root_role_id=Role.EDITOR,
        created_at=created,
    )
    ProjectRoleAssignmentFactory(project=ProjectFactory(id="shop"), user=user, role_id=Role.OWNER)
    group = GroupFactory()
    GroupMembershipFactory(group=group, user=user)
    ProjectRoleAssignmentFactory(
        project=ProjectFactory(id="blog"), group=group, role_id=Role.MEMBER
    )
    client = _client_with(make_token("personal", user=user)[1])

    response = client.get(URL)

    assert response.status_code == 200
    body = response.json()
    assert body["user"] == {
        "id": user.id,
        "isAPI": False,
        "name": "Ada",
        "email": "ada@example.com",
        "username": "ada",
        "imageUrl": "",
        "loginAttempts": 0,
        "emailSent": False,
        "rootRole": Role.EDITOR,
        "seenAt": None,
        "createdAt": "2026-02-01T09:30:00Z",
        "accountType": "User",
        "scimId": None,
    }
    editor = sorted(Role.objects.get(pk=Role.EDITOR).permissions)
    member = sorted(Role.objects.get(pk=Role.MEMBER).permissions)
    owner = sorted(Role.objects.get(pk=Role.OWNER).permissions)
    assert body["permissions"] == (
        [{"permission": p} for p in editor]
        + [{"permission": p, "project": "blog"} for p in member]
        + [{"permission": p, "project": "shop"} for p in owner]
    )
    assert body["feedback"] == []
    assert body["splash"] == {}


def test_me__viewer__no_permission_listed(viewer_client):
    body = viewer_client.get(URL).json()

    assert body["user"]["id"] == viewer_client.user.id
    assert body["permissions"] == []


def test_me__few_queries(admin_user_client, django_assert_max_num_queries):
    admin_user_client.get(URL)

    with django_assert_max_num_queries(5):  # token, root roles, project roles direct and group
        assert admin_user_client.get(URL).status_code == 200


def test_me__anonymous__401(anon_client, db):
    assert_error(anon_client.get(URL), 401, "AuthenticationRequired")


def test_me__client_token__403(client_token_client):
    assert_error(client_token_client.get(URL), 403, "NoAccessError")
