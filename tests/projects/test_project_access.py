"""POST /api/admin/projects/:projectId/access: give users and groups project roles."""

from __future__ import annotations

import pytest

from flagadmin.core.models import AuditEvent, Role, RoleType
from projects.models import ProjectRoleAssignment
from tests.conftest import assert_error
from tests.factories import (
    GroupFactory,
    GroupMembershipFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def url(project_id: str = "team") -> str:
    return f"/api/admin/projects/{project_id}/access"


def post(client, body: object, project_id: str = "team"):
    return client.post(url(project_id), body, format="json")


def holdings(project_id: str = "team") -> set[tuple[int, int | None, int | None]]:
    return set(
        ProjectRoleAssignment.objects.filter(project_id=project_id).values_list(
            "role_id", "user_id", "group_id"
        )
    )


@pytest.fixture
def team():
    return ProjectFactory(id="team", name="Team")


# --- success ---------------------------------------------------------------------------------


def test_add_access__users_and_groups_each_role__200_body_and_event(admin_client, team):
    alice, bob = UserFactory(), UserFactory()
    group = GroupFactory()

    response = post(
        admin_client,
        {"roles": [Role.OWNER, Role.MEMBER], "users": [alice.pk, bob.pk], "groups": [group.pk]},
    )

    assert response.status_code == 200, response.content
    assert response.json() == {
        "project": "team",
        "users": [
            {"id": alice.pk, "roles": [Role.OWNER, Role.MEMBER]},
            {"id": bob.pk, "roles": [Role.OWNER, Role.MEMBER]},
        ],
        "groups": [{"id": group.pk, "roles": [Role.OWNER, Role.MEMBER]}],
    }
    assert holdings() == {
        (Role.OWNER, alice.pk, None),
        (Role.MEMBER, alice.pk, None),
        (Role.OWNER, bob.pk, None),
        (Role.MEMBER, bob.pk, None),
        (Role.OWNER, None, group.pk),
        (Role.MEMBER, None, group.pk),
    }
    event = AuditEvent.objects.get(type="project-access-added")
    assert (event.project, event.created_by) == ("team", "admin-tok")
    assert event.data == {
        "roles": [Role.OWNER, Role.MEMBER],
        "users": sorted([alice.pk, bob.pk]),
        "groups": [group.pk],
    }


def test_add_access__shows_in_the_list(admin_client, team):
    owner = UserFactory(name="Olga", email="olga@example.com")
    group = GroupFactory(name="Ops")
    GroupMembershipFactory(group=group, user=UserFactory())

    post(admin_client, {"roles": [Role.OWNER], "users": [owner.pk], "groups": [group.pk]})

    listed = {p["id"]: p for p in admin_client.get("/api/admin/projects").json()["projects"]}
    assert listed["team"]["owners"] == [
        {"ownerType": "user", "name": "Olga", "email": "olga@example.com", "imageUrl": None},
        {"ownerType": "group", "name": "Ops"},
    ]
    assert listed["team"]["memberCount"] == 2


def test_add_access__repeated__nothing_changes_nothing_recorded(admin_client, team):
    user = UserFactory()
    post(admin_client, {"roles": [Role.MEMBER], "users": [user.pk]})
    first = ProjectRoleAssignment.objects.get(project_id="team", user=user)

    response = post(admin_client, {"roles": [Role.MEMBER], "users": [user.pk, user.pk]})

    assert response.status_code == 200
    assert list(ProjectRoleAssignment.objects.filter(project_id="team")) == [first]
    assert AuditEvent.objects.filter(type="project-access-added").count() == 1


def test_add_access__partly_new__only_new_ones_added_and_recorded(admin_client, team):
    user, other = UserFactory(), UserFactory()
    ProjectRoleAssignmentFactory(project=team, role_id=Role.MEMBER, user=user)

    post(admin_client, {"roles": [Role.MEMBER], "users": [user.pk, other.pk]})

    assert holdings() == {(Role.MEMBER, user.pk, None), (Role.MEMBER, other.pk, None)}
    assert AuditEvent.objects.get(type="project-access-added").data["users"] == [other.pk]


def test_add_access__custom_project_role__200(admin_client, team):
    role = Role.objects.create(name="Reviewer", type=RoleType.CUSTOM, permissions=[])
    user = UserFactory()

    response = post(admin_client, {"roles": [role.pk], "users": [user.pk]})

    assert response.status_code == 200, response.content
    assert holdings() == {(role.pk, user.pk, None)}


def test_add_access__only_groups__200(admin_client, team):
    group = GroupFactory()

    response = post(admin_client, {"roles": [Role.MEMBER], "groups": [group.pk]})

    assert response.status_code == 200
    assert holdings() == {(Role.MEMBER, None, group.pk)}


def test_add_access__archived_project__200(admin_client):
    ProjectFactory(id="team", archived_at="2024-01-01T00:00:00Z")
    user = UserFactory()

    assert post(admin_client, {"roles": [Role.MEMBER], "users": [user.pk]}).status_code == 200


# --- who may ---------------------------------------------------------------------------------


def test_add_access__project_owner__200(viewer_client, team):
    ProjectRoleAssignmentFactory(project=team, role_id=Role.OWNER, user=viewer_client.user)
    newcomer = UserFactory()

    response = post(viewer_client, {"roles": [Role.MEMBER], "users": [newcomer.pk]})

    assert response.status_code == 200, response.content
    assert (Role.MEMBER, newcomer.pk, None) in holdings()


def test_add_access__owner_through_a_group__200(viewer_client, team):
    group = GroupFactory()
    GroupMembershipFactory(group=group, user=viewer_client.user)
    ProjectRoleAssignmentFactory(project=team, role_id=Role.OWNER, group=group)

    response = post(viewer_client, {"roles": [Role.MEMBER], "users": [UserFactory().pk]})

    assert response.status_code == 200, response.content


def test_add_access__admin_user__200(admin_user_client, team):
    response = post(admin_user_client, {"roles": [Role.MEMBER], "users": [UserFactory().pk]})

    assert response.status_code == 200


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param("member", id="member-of-the-project"),
        pytest.param("owner-elsewhere", id="owner-of-another-project"),
        pytest.param("editor", id="editor-root-role"),
    ],
)
def test_add_access__not_owner_nor_admin__403(editor_client, team, setup):
    user = editor_client.user
    if setup == "member":
        ProjectRoleAssignmentFactory(project=team, role_id=Role.MEMBER, user=user)
    elif setup == "owner-elsewhere":
        ProjectRoleAssignmentFactory(project=ProjectFactory(), role_id=Role.OWNER, user=user)

    response = post(editor_client, {"roles": [Role.OWNER], "users": [user.pk]})

    body = assert_error(response, 403, "NoAccessError")
    assert body["permissions"] == ["UPDATE_PROJECT_ACCESS"]
    assert (Role.OWNER, user.pk, None) not in holdings()


def test_add_access__client_token__403(client_token_client, team):
    assert_error(post(client_token_client, {"roles": [4], "users": []}), 403, "NoAccessError")


def test_add_access__anonymous__401(anon_client, team):
    assert_error(post(anon_client, {"roles": [4], "users": []}), 401, "AuthenticationRequired")


def test_add_access__not_json__415(admin_client, team):
    response = admin_client.generic("POST", url(), '{"roles": [4]}', content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


def test_add_access__unknown_project__404(admin_client):
    response = post(admin_client, {"roles": [Role.MEMBER], "users": []}, project_id="nope")

    body = assert_error(response, 404, "NotFoundError")
    assert body["message"] == "Project with id nope does not exist"


# --- validation ------------------------------------------------------------------------------

REQUIRED = "property is required. It was not present on the data you sent."


@pytest.mark.parametrize(
    ("body", "details"),
    [
        pytest.param(
            {"users": []},
            [("/body/roles", f"The `/body/roles` {REQUIRED}")],
            id="roles-missing",
        ),
        pytest.param(
            {"roles": []},
            [
                (
                    "/body/roles",
                    "The `/body/roles` property must NOT have fewer than 1 items. You sent [].",
                )
            ],
            id="roles-empty",
        ),
        pytest.param(
            {"roles": [Role.ADMIN]},
            [
                (
                    "/body/roles/0",
                    "The `/body/roles/0` property must be the id of a project role, not of a "
                    "root role. You sent 1.",
                )
            ],
            id="root-role",
        ),
        pytest.param(
            {"roles": [Role.MEMBER, 999]},
            [
                (
                    "/body/roles/1",
                    "The `/body/roles/1` property must be the id of an existing project role. "
                    "You sent 999.",
                )
            ],
            id="unknown-role",
        ),
        pytest.param(
            {"roles": ["4"]},
            [("/body/roles/0", 'The `/body/roles/0` property must be integer. You sent "4".')],
            id="role-as-string",
        ),
        pytest.param(
            {"roles": [4], "users": "all"},
            [("/body/users", 'The `/body/users` property must be array. You sent "all".')],
            id="users-not-a-list",
        ),
        pytest.param(
            {"roles": [4], "users": [999999]},
            [
                (
                    "/body/users/0",
                    "The `/body/users/0` property must be the id of an existing user. "
                    "You sent 999999.",
                )
            ],
            id="unknown-user",
        ),
        pytest.param(
            {"roles": [4], "users": [-42]},
            [
                (
                    "/body/users/0",
                    "The `/body/users/0` property must be the id of an existing user. "
                    "You sent -42.",
                )
            ],
            id="system-user",
        ),
        pytest.param(
            {"roles": [4], "groups": [999999]},
            [
                (
                    "/body/groups/0",
                    "The `/body/groups/0` property must be the id of an existing group. "
                    "You sent 999999.",
                )
            ],
            id="unknown-group",
        ),
        pytest.param(
            {"roles": [Role.VIEWER, 998], "groups": [999999]},
            [
                (
                    "/body/roles/0",
                    "The `/body/roles/0` property must be the id of a project role, not of a "
                    "root role. You sent 3.",
                ),
                (
                    "/body/roles/1",
                    "The `/body/roles/1` property must be the id of an existing project role. "
                    "You sent 998.",
                ),
                (
                    "/body/groups/0",
                    "The `/body/groups/0` property must be the id of an existing group. "
                    "You sent 999999.",
                ),
            ],
            id="several",
        ),
    ],
)
def test_add_access__invalid_body__400_naming_each(admin_client, team, body, details):
    response = post(admin_client, body)

    error = assert_error(response, 400, "ValidationError")
    assert [(d["path"], d["message"]) for d in error["details"]] == details
    assert holdings() == set()
    assert not AuditEvent.objects.filter(type="project-access-added").exists()


def test_add_access__one_unknown_user__nothing_added(admin_client, team):
    known = UserFactory()

    response = post(admin_client, {"roles": [Role.MEMBER], "users": [known.pk, 999999]})

    assert_error(response, 400, "ValidationError")
    assert holdings() == set()
