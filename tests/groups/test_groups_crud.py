"""GET/POST /api/admin/groups, GET/DELETE /api/admin/groups/:groupId (companions of the PUT)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from flagadmin.core.models import AuditEvent, Role
from groups.models import Group, GroupMembership
from tests.conftest import assert_error
from tests.factories import (
    GroupFactory,
    GroupMembershipFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
)


def post(client, body, **kwargs):
    return client.post("/api/admin/groups", body, format="json", **kwargs)


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- GET /api/admin/groups -------------------------------------------------------------------


def _populate(count: int) -> None:
    """`count` groups, each with two members and a role in a project."""
    for index in range(count):
        group = GroupFactory(name=f"team-{index:03}")
        GroupMembershipFactory.create_batch(2, group=group)
        ProjectRoleAssignmentFactory(group=group, role_id=Role.MEMBER)


def test_list_groups__each_with_members_count_and_projects(admin_client, db):
    group = GroupFactory(name="platform", root_role_id=Role.EDITOR, mappings_sso=["sso"])
    alice = UserFactory()
    GroupMembershipFactory(group=group, user=alice, created_by="x@example.com")
    ProjectRoleAssignmentFactory(group=group, project__id="web", role_id=Role.OWNER)
    empty = GroupFactory(name="empty")

    response = admin_client.get("/api/admin/groups")

    assert response.status_code == 200, response.content
    groups = response.json()["groups"]
    assert [g["id"] for g in groups] == [group.pk, empty.pk]
    first = groups[0]
    assert {k: v for k, v in first.items() if k not in ("createdAt", "users")} == {
        "id": group.pk,
        "name": "platform",
        "description": None,
        "mappingsSSO": ["sso"],
        "rootRole": Role.EDITOR,
        "createdBy": "admin@example.com",
        "userCount": 1,
        "projects": ["web"],
        "scimId": None,
    }
    assert [(u["user"]["id"], u["createdBy"]) for u in first["users"]] == [
        (alice.pk, "x@example.com")
    ]
    assert (groups[1]["userCount"], groups[1]["users"], groups[1]["projects"]) == (0, [], [])


def test_list_groups__none__empty_list(admin_client, db):
    response = admin_client.get("/api/admin/groups")

    assert response.status_code == 200
    assert response.json() == {"groups": []}


@pytest.mark.parametrize("size", [2, 25])
def test_list_groups__query_count_does_not_grow(
    admin_client, db, size, django_assert_max_num_queries
):
    _populate(size)
    admin_client.get("/api/admin/groups")  # the token's throttled last_used_at write

    # The token lookup, then groups, memberships joined with users, project roles.
    with django_assert_max_num_queries(4):
        response = admin_client.get("/api/admin/groups")

    assert response.status_code == 200
    assert len(response.json()["groups"]) == size
    assert all(g["userCount"] == 2 for g in response.json()["groups"])


def test_list_groups__same_query_count_at_two_sizes(admin_client, db):
    _populate(2)
    admin_client.get("/api/admin/groups")  # the token's throttled last_used_at write
    with CaptureQueriesContext(connection) as small:
        admin_client.get("/api/admin/groups")
    for index in range(30):
        group = GroupFactory(name=f"more-{index:03}")
        GroupMembershipFactory.create_batch(3, group=group)
        ProjectRoleAssignmentFactory(group=group)
    with CaptureQueriesContext(connection) as large:
        response = admin_client.get("/api/admin/groups")

    assert len(response.json()["groups"]) == 32
    assert len(large.captured_queries) == len(small.captured_queries)


def test_list_groups__anonymous__401(anon_client, db):
    assert_error(anon_client.get("/api/admin/groups"), 401, "AuthenticationRequired")


@pytest.mark.parametrize("principal", ["viewer_client", "client_token_client"])
def test_list_groups__without_admin__403(request, db, principal):
    client = request.getfixturevalue(principal)

    assert_error(client.get("/api/admin/groups"), 403, "NoAccessError")


# --- POST /api/admin/groups ------------------------------------------------------------------


def test_create_group__201_with_location_and_group(admin_user_client, db):
    alice, bob = UserFactory(), UserFactory()
    before = datetime.now(UTC)

    response = post(
        admin_user_client,
        {
            "name": "platform",
            "description": "The platform team",
            "mappingsSSO": ["platform-sso"],
            "rootRole": Role.VIEWER,
            "users": [
                {"user": {"id": bob.pk}},
                {"user": {"id": alice.pk}},
                {"user": {"id": bob.pk}},
            ],
        },
    )

    assert response.status_code == 201, response.content
    group = Group.objects.get(name="platform")
    assert response["Location"] == f"/api/admin/groups/{group.pk}"
    body = response.json()
    actor = admin_user_client.user.email
    assert {k: v for k, v in body.items() if k not in ("createdAt", "users")} == {
        "id": group.pk,
        "name": "platform",
        "description": "The platform team",
        "mappingsSSO": ["platform-sso"],
        "rootRole": Role.VIEWER,
        "createdBy": actor,
        "userCount": 2,
        "projects": [],
        "scimId": None,
    }
    assert parse_time(body["createdAt"]) >= before
    assert sorted(u["user"]["id"] for u in body["users"]) == sorted([alice.pk, bob.pk])
    assert {u["createdBy"] for u in body["users"]} == {actor}
    memberships = GroupMembership.objects.filter(group=group)
    assert sorted(m.user_id for m in memberships) == sorted([alice.pk, bob.pk])
    assert all(m.joined_at >= before and not m.added_by_sso for m in memberships)


def test_create_group__only_name__defaults(admin_client, db):
    response = post(admin_client, {"name": "minimal"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["description"], body["mappingsSSO"], body["rootRole"]) == (None, [], None)
    assert (body["users"], body["userCount"], body["createdBy"]) == ([], 0, "admin-tok")


def test_create_group__audit_event(admin_client, db):
    alice = UserFactory()

    response = post(admin_client, {"name": "platform", "users": [{"user": {"id": alice.pk}}]})

    event = AuditEvent.objects.get(type="group-created")
    assert (event.created_by, event.created_by_user_id, event.pre_data) == ("admin-tok", -42, None)
    assert event.data == {
        "id": response.json()["id"],
        "name": "platform",
        "description": None,
        "mappingsSSO": [],
        "rootRole": None,
        "createdBy": "admin-tok",
        "createdAt": response.json()["createdAt"],
        "scimId": None,
        "users": [alice.pk],
    }


def test_create_group__taken_name__409(admin_client, db):
    GroupFactory(name="platform")

    error = assert_error(post(admin_client, {"name": "platform"}), 409, "NameExistsError")

    assert error["message"] == "Group name already exists"
    assert Group.objects.filter(name="platform").count() == 1
    assert not AuditEvent.objects.filter(type="group-created").exists()


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({}, "/body/name", id="name-missing"),
        pytest.param({"name": ""}, "/body/name", id="name-empty"),
        pytest.param({"name": "g", "rootRole": Role.MEMBER}, "/body/rootRole", id="project-role"),
        pytest.param(
            {"name": "g", "users": [{"user": {"id": 999_999}}]},
            "/body/users/0/user/id",
            id="unknown-user",
        ),
        pytest.param({"name": "g", "mappingsSSO": [None]}, "/body/mappingsSSO/0", id="sso-null"),
    ],
)
def test_create_group__invalid_body__400_and_nothing_created(admin_client, db, body, path):
    error = assert_error(post(admin_client, body), 400, "ValidationError")

    assert [d["path"] for d in error["details"]] == [path]
    assert not Group.objects.exists()


def test_create_group__invalid_body_and_taken_name__400_before_409(admin_client, db):
    GroupFactory(name="platform")

    response = post(admin_client, {"name": "platform", "rootRole": 99})

    assert_error(response, 400, "ValidationError")


def test_create_group__anonymous__401(anon_client, db):
    assert_error(post(anon_client, {"name": "x"}), 401, "AuthenticationRequired")


@pytest.mark.parametrize("principal", ["viewer_client", "editor_client", "client_token_client"])
def test_create_group__without_admin__403(request, db, principal):
    client = request.getfixturevalue(principal)

    error = assert_error(post(client, {"name": "x"}), 403, "NoAccessError")

    assert error["permissions"] == ["ADMIN"]
    assert not Group.objects.exists()


def test_create_group__wrong_content_type__415(admin_client, db):
    response = admin_client.post("/api/admin/groups", "name=x", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


# --- GET /api/admin/groups/:groupId ----------------------------------------------------------


def test_get_group__200(admin_client, db):
    group = GroupFactory(name="platform", scim_id="scim-1")
    alice = UserFactory()
    joined = datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC)
    GroupMembershipFactory(group=group, user=alice, joined_at=joined, created_by="a@example.com")
    ProjectRoleAssignmentFactory(group=group, project__id="web")
    ProjectRoleAssignmentFactory(group=group, project_id="web", role_id=Role.MEMBER)

    response = admin_client.get(f"/api/admin/groups/{group.pk}")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["name"], body["scimId"]) == (group.pk, "platform", "scim-1")
    assert body["projects"] == ["web"]
    assert body["userCount"] == 1
    member = body["users"][0]
    assert (member["joinedAt"], member["createdBy"]) == ("2024-02-03T04:05:06Z", "a@example.com")
    assert member["user"]["id"] == alice.pk
    assert member["user"]["email"] == alice.email


@pytest.mark.parametrize("group_id", ["424242", "abc", "99999999999999999999"])
def test_get_group__unknown_id__404(admin_client, db, group_id):
    error = assert_error(admin_client.get(f"/api/admin/groups/{group_id}"), 404, "NotFoundError")

    assert error["message"] == "No group found"


def test_get_group__anonymous__401(anon_client, db):
    assert_error(anon_client.get("/api/admin/groups/1"), 401, "AuthenticationRequired")


@pytest.mark.parametrize("principal", ["viewer_client", "client_token_client"])
def test_get_group__without_admin__403(request, db, principal):
    group = GroupFactory()
    client = request.getfixturevalue(principal)

    assert_error(client.get(f"/api/admin/groups/{group.pk}"), 403, "NoAccessError")


# --- DELETE /api/admin/groups/:groupId -------------------------------------------------------


def test_delete_group__200_empty_and_gone(admin_client, db):
    group = GroupFactory(name="platform")
    alice = UserFactory()
    GroupMembershipFactory(group=group, user=alice)
    assignment = ProjectRoleAssignmentFactory(group=group)

    response = admin_client.delete(f"/api/admin/groups/{group.pk}")

    assert response.status_code == 200
    assert response.content == b""
    assert not Group.objects.filter(pk=group.pk).exists()
    assert not GroupMembership.objects.filter(group_id=group.pk).exists()
    assert not type(assignment).objects.filter(pk=assignment.pk).exists()
    assert alice.__class__.objects.filter(pk=alice.pk).exists()
    assert_error(admin_client.get(f"/api/admin/groups/{group.pk}"), 404, "NotFoundError")


def test_delete_group__audit_event(admin_client, db):
    group = GroupFactory(name="platform")
    alice = UserFactory()
    GroupMembershipFactory(group=group, user=alice)

    admin_client.delete(f"/api/admin/groups/{group.pk}")

    event = AuditEvent.objects.get(type="group-deleted")
    assert (event.created_by, event.data) == ("admin-tok", None)
    assert event.pre_data["id"] == group.pk
    assert event.pre_data["name"] == "platform"
    assert event.pre_data["users"] == [alice.pk]


@pytest.mark.parametrize("group_id", ["424242", "abc"])
def test_delete_group__unknown_id__404(admin_client, db, group_id):
    error = assert_error(admin_client.delete(f"/api/admin/groups/{group_id}"), 404, "NotFoundError")

    assert error["message"] == "No group found"
    assert not AuditEvent.objects.filter(type="group-deleted").exists()


def test_delete_group__anonymous__401(anon_client, db):
    assert_error(anon_client.delete("/api/admin/groups/1"), 401, "AuthenticationRequired")


@pytest.mark.parametrize("principal", ["viewer_client", "editor_client", "client_token_client"])
def test_delete_group__without_admin__403(request, db, principal):
    group = GroupFactory()
    client = request.getfixturevalue(principal)

    assert_error(client.delete(f"/api/admin/groups/{group.pk}"), 403, "NoAccessError")
    assert Group.objects.filter(pk=group.pk).exists()
