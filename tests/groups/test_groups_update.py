"""PUT /api/admin/groups/:groupId — replace a user group, all or nothing (contract section 5)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection, transaction

from flagadmin.core.models import AuditEvent, Role, RoleType
from groups import services
from groups.models import Group, GroupMembership
from tests.conftest import assert_error
from tests.factories import (
    GroupFactory,
    GroupMembershipFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
)
from tests.statements import trace

REQUIRED_NAME = "The `/body/name` property is required. It was not present on the data you sent."
ROOT_ROLE = "must be the id of a root role (1 Admin, 2 Editor, 3 Viewer, or a custom root role)"
LONG_NAME = "x" * 256


def put(client, group_id, body, **kwargs):
    return client.put(f"/api/admin/groups/{group_id}", body, format="json", **kwargs)


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def state_of(group: Group) -> dict:
    """Everything a PUT may change, read back from the database."""
    group = Group.objects.get(pk=group.pk)
    return {
        "name": group.name,
        "description": group.description,
        "mappings_sso": group.mappings_sso,
        "root_role_id": group.root_role_id,
        "members": sorted(
            GroupMembership.objects.filter(group=group).values_list(
                "user_id", "joined_at", "created_by", "added_by_sso"
            )
        ),
    }


def user_json(user) -> dict:
    return {
        "id": user.pk,
        "isAPI": False,
        "name": user.name,
        "email": user.email,
        "username": user.username,
        "imageUrl": user.image_url,
        "loginAttempts": 0,
        "emailSent": False,
        "rootRole": user.root_role_id,
        "seenAt": None,
        "createdAt": user.created_at.isoformat().replace("+00:00", "Z"),
        "accountType": "User",
        "scimId": None,
    }


@pytest.fixture
def group(db) -> Group:
    return GroupFactory(
        name="platform",
        description="The platform team",
        mappings_sso=["platform-sso"],
        root_role_id=Role.VIEWER,
    )


# --- success ---------------------------------------------------------------------------------


def test_update_group__whole_body__200_with_group_schema(admin_client, group):
    # Given a group with one member, holding a role in two projects
    alice = UserFactory(email="alice@example.com")
    joined = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    GroupMembershipFactory(group=group, user=alice, joined_at=joined, created_by="old@example.com")
    ProjectRoleAssignmentFactory(group=group, project__id="zeta", role_id=Role.MEMBER)
    ProjectRoleAssignmentFactory(group=group, project__id="alpha", role_id=Role.OWNER)

    # When it is replaced
    response = put(
        admin_client,
        group.pk,
        {
            "name": "platform-team",
            "description": "Runs the platform",
            "mappingsSSO": ["a", "b"],
            "rootRole": Role.EDITOR,
            "users": [{"user": {"id": alice.pk}}],
        },
    )

    # Then the whole groupSchema comes back
    assert response.status_code == 200, response.content
    body = response.json()
    assert body == {
        "id": group.pk,
        "name": "platform-team",
        "description": "Runs the platform",
        "mappingsSSO": ["a", "b"],
        "rootRole": Role.EDITOR,
        "createdBy": "admin@example.com",
        "createdAt": body["createdAt"],
        "users": [
            {
                "joinedAt": "2024-01-02T03:04:05Z",
                "createdBy": "old@example.com",
                "user": user_json(alice),
            }
        ],
        "userCount": 1,
        "projects": ["alpha", "zeta"],
        "scimId": None,
    }
    assert parse_time(body["createdAt"]) == group.created_at


def test_update_group__optional_fields_omitted__reset_to_defaults(admin_client, group):
    GroupMembershipFactory(group=group)

    response = put(admin_client, group.pk, {"name": "platform"})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["description"], body["mappingsSSO"], body["rootRole"]) == (None, [], None)
    assert (body["users"], body["userCount"]) == ([], 0)
    assert state_of(group) | {"members": None} == {
        "name": "platform",
        "description": None,
        "mappings_sso": [],
        "root_role_id": None,
        "members": None,
    }
    assert not GroupMembership.objects.filter(group=group).exists()


@pytest.mark.parametrize(
    ("field", "sent", "stored"),
    [
        pytest.param("description", None, None, id="description-null"),
        pytest.param("description", "", "", id="description-empty-kept-as-sent"),
        pytest.param("rootRole", None, None, id="rootRole-null"),
        pytest.param("rootRole", 1, 1, id="rootRole-admin"),
        pytest.param("rootRole", 3.0, 3, id="rootRole-integral-number"),
        pytest.param("mappingsSSO", ["a", "b", "a"], ["a", "b"], id="mappingsSSO-repeats-collapse"),
        pytest.param("mappingsSSO", [], [], id="mappingsSSO-empty"),
    ],
)
def test_update_group__accepted_values(admin_client, group, field, sent, stored):
    response = put(admin_client, group.pk, {"name": "platform", field: sent})

    assert response.status_code == 200, response.content
    assert response.json()[field] == stored


def test_update_group__custom_root_role__accepted(admin_client, group):
    custom = Role.objects.create(name="Auditor", type=RoleType.ROOT_CUSTOM)

    response = put(admin_client, group.pk, {"name": "platform", "rootRole": custom.pk})

    assert response.status_code == 200, response.content
    assert response.json()["rootRole"] == custom.pk


def test_update_group__unknown_body_fields__ignored(admin_client, group):
    response = put(
        admin_client,
        group.pk,
        {"name": "platform", "id": 999, "scimId": "x", "createdBy": "me", "userCount": 9},
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["scimId"], body["createdBy"]) == (group.pk, None, "admin@example.com")


# --- membership ------------------------------------------------------------------------------


def test_update_group__members_kept_added_removed(admin_user_client, group):
    # Given two members added long ago, one of them by SSO
    stays, leaves, joins = UserFactory(), UserFactory(), UserFactory()
    joined = datetime(2023, 5, 6, 7, 8, 9, tzinfo=UTC)
    GroupMembershipFactory(
        group=group, user=stays, joined_at=joined, created_by="sso-sync", added_by_sso=True
    )
    GroupMembershipFactory(group=group, user=leaves, joined_at=joined, created_by="x@example.com")
    before = datetime.now(UTC)

    # When a signed-in admin keeps one, drops one and adds one
    response = put(
        admin_user_client,
        group.pk,
        {"name": "platform", "users": [{"user": {"id": joins.pk}}, {"user": {"id": stays.pk}}]},
    )

    # Then the one who stays keeps when and by whom (and how) it was added
    assert response.status_code == 200, response.content
    members = {m.user_id: m for m in GroupMembership.objects.filter(group=group)}
    assert set(members) == {stays.pk, joins.pk}
    kept = members[stays.pk]
    assert (kept.joined_at, kept.created_by, kept.added_by_sso) == (joined, "sso-sync", True)
    # and the newcomer joined during the request, added by the acting user's audit name
    new = members[joins.pk]
    assert new.joined_at >= before
    assert (new.created_by, new.added_by_sso) == (admin_user_client.user.email, False)
    # and the response shows the same
    users = {u["user"]["id"]: u for u in response.json()["users"]}
    assert users[stays.pk]["createdBy"] == "sso-sync"
    assert parse_time(users[stays.pk]["joinedAt"]) == joined
    assert users[joins.pk]["createdBy"] == admin_user_client.user.email
    assert response.json()["userCount"] == 2


def test_update_group__admin_token__new_members_created_by_token_name(admin_client, group):
    user = UserFactory()

    response = put(
        admin_client, group.pk, {"name": "platform", "users": [{"user": {"id": user.pk}}]}
    )

    assert response.status_code == 200, response.content
    assert GroupMembership.objects.get(group=group, user=user).created_by == "admin-tok"


def test_update_group__repeated_user_ids__collapse(admin_client, group):
    user = UserFactory()
    item = {"user": {"id": user.pk}}

    response = put(admin_client, group.pk, {"name": "platform", "users": [item, item, item]})

    assert response.status_code == 200, response.content
    assert response.json()["userCount"] == 1
    assert GroupMembership.objects.filter(group=group).count() == 1


# --- validation ------------------------------------------------------------------------------


def _detail(path: str, predicate: str, sent: str) -> dict:
    return {"path": path, "message": f"The `{path}` property {predicate}. You sent {sent}."}


@pytest.mark.parametrize(
    ("body", "details"),
    [
        pytest.param({}, [{"path": "/body/name", "message": REQUIRED_NAME}], id="name-missing"),
        pytest.param(
            {"name": ""},
            [_detail("/body/name", "must NOT have fewer than 1 characters", '""')],
            id="name-empty",
        ),
        pytest.param({"name": 5}, [_detail("/body/name", "must be string", "5")], id="name-number"),
        pytest.param(
            {"name": None}, [_detail("/body/name", "must be string", "null")], id="name-null"
        ),
        pytest.param(
            {"name": LONG_NAME},
            [_detail("/body/name", "must NOT have more than 255 characters", f'"{LONG_NAME}"')],
            id="name-too-long",
        ),
        pytest.param(
            {"name": "g", "description": 5},
            [_detail("/body/description", "must be string", "5")],
            id="description-number",
        ),
        pytest.param(
            {"name": "g", "mappingsSSO": "a"},
            [_detail("/body/mappingsSSO", "must be array", '"a"')],
            id="mappingsSSO-string",
        ),
        pytest.param(
            {"name": "g", "mappingsSSO": [1]},
            [_detail("/body/mappingsSSO/0", "must be string", "1")],
            id="mappingsSSO-item-number",
        ),
        pytest.param(
            {"name": "g", "rootRole": "3"},
            [_detail("/body/rootRole", "must be number", '"3"')],
            id="rootRole-string",
        ),
        pytest.param(
            {"name": "g", "rootRole": True},
            [_detail("/body/rootRole", "must be number", "true")],
            id="rootRole-boolean",
        ),
        pytest.param(
            {"name": "g", "rootRole": Role.OWNER},
            [_detail("/body/rootRole", ROOT_ROLE, "4")],
            id="rootRole-project-role",
        ),
        pytest.param(
            {"name": "g", "rootRole": 100},
            [_detail("/body/rootRole", ROOT_ROLE, "100")],
            id="rootRole-unknown",
        ),
        pytest.param(
            {"name": "g", "rootRole": 2.5},
            [_detail("/body/rootRole", ROOT_ROLE, "2.5")],
            id="rootRole-fraction",
        ),
        pytest.param(
            {"name": "g", "rootRole": 0},
            [_detail("/body/rootRole", ROOT_ROLE, "0")],
            id="rootRole-zero",
        ),
        pytest.param(
            {"name": "g", "users": {"user": {"id": 1}}},
            [_detail("/body/users", "must be array", '{"user": {"id": 1}}')],
            id="users-object",
        ),
        pytest.param(
            {"name": "g", "users": [5]},
            [_detail("/body/users/0", "must be object", "5")],
            id="users-item-number",
        ),
        pytest.param(
            {"name": "g", "users": [{"id": 1}]},
            [
                {
                    "path": "/body/users/0/user",
                    "message": "The `/body/users/0/user` property is required. It was not "
                    "present on the data you sent.",
                }
            ],
            id="users-item-without-user",
        ),
        pytest.param(
            {"name": "g", "users": [{"user": 1}]},
            [_detail("/body/users/0/user", "must be object", "1")],
            id="users-user-number",
        ),
        pytest.param(
            {"name": "g", "users": [{"user": {"id": "1"}}]},
            [_detail("/body/users/0/user/id", "must be integer", '"1"')],
            id="users-id-string",
        ),
        pytest.param(
            {"name": "g", "users": [{"user": {"id": -1}}]},
            [_detail("/body/users/0/user/id", "must be >= 0", "-1")],
            id="users-id-negative",
        ),
        pytest.param(
            {"name": "g", "users": [{"user": {"id": 2**63}}]},
            [_detail("/body/users/0/user/id", "must be <= 9223372036854775807", str(2**63))],
            id="users-id-beyond-64-bits",
        ),
        pytest.param(["name"], [_detail("/body", "must be object", '["name"]')], id="body-array"),
        pytest.param(
            {"name": "", "rootRole": 4, "users": "x"},
            [
                _detail("/body/name", "must NOT have fewer than 1 characters", '""'),
                _detail("/body/rootRole", ROOT_ROLE, "4"),
                _detail("/body/users", "must be array", '"x"'),
            ],
            id="one-detail-per-failing-property",
        ),
    ],
)
def test_update_group__invalid_body__400(admin_client, group, body, details):
    before = state_of(group)

    response = put(admin_client, group.pk, body)

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == details
    assert state_of(group) == before


def test_update_group__unknown_user_ids__400_names_each_and_changes_nothing(admin_client, group):
    # Given a group with two members
    alice, bob = UserFactory(), UserFactory()
    GroupMembershipFactory(group=group, user=alice)
    GroupMembershipFactory(group=group, user=bob)
    before = state_of(group)
    events_before = AuditEvent.objects.count()

    # When the body renames it and names members of whom two do not exist (one twice)
    response = put(
        admin_client,
        group.pk,
        {
            "name": "renamed",
            "description": "changed",
            "rootRole": Role.ADMIN,
            "users": [
                {"user": {"id": alice.pk}},
                {"user": {"id": 999_999}},
                {"user": {"id": 999_999}},
                {"user": {"id": 888_888}},
            ],
        },
    )

    # Then each unknown id is named once, where it first appears
    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [
        _detail("/body/users/1/user/id", "must be the id of an existing user", "999999"),
        _detail("/body/users/3/user/id", "must be the id of an existing user", "888888"),
    ]
    # and nothing changed: name, description, role, members, events
    assert state_of(group) == before
    assert AuditEvent.objects.count() == events_before


def test_update_group__failure_after_writes__rolls_everything_back(
    admin_client, group, monkeypatch
):
    # Given a group with two members, and an audit log that fails after every row was written
    alice, bob, carol = UserFactory(), UserFactory(), UserFactory()
    GroupMembershipFactory(group=group, user=alice)
    GroupMembershipFactory(group=group, user=bob)
    before = state_of(group)

    def failing_record_event(*args, **kwargs):
        raise RuntimeError("audit log unavailable")

    monkeypatch.setattr(services, "record_event", failing_record_event)

    # When an update changes details and members
    response = put(
        admin_client,
        group.pk,
        {
            "name": "renamed",
            "description": "changed",
            "users": [{"user": {"id": alice.pk}}, {"user": {"id": carol.pk}}],
        },
    )

    # Then it fails as a whole: name, description and members are exactly as they were
    assert_error(response, 500, "InternalError")
    assert state_of(group) == before


def test_update_group__body_is_malformed_json__400(admin_client, group):
    response = admin_client.put(
        f"/api/admin/groups/{group.pk}", '{"name": ', content_type="application/json"
    )

    assert_error(response, 400, "ValidationError")


# --- name conflicts --------------------------------------------------------------------------


def test_update_group__name_of_another_group__409(admin_client, group):
    GroupFactory(name="taken")
    before = state_of(group)

    response = put(admin_client, group.pk, {"name": "taken", "description": "new"})

    error = assert_error(response, 409, "NameExistsError")
    assert error["message"] == "Group name already exists"
    assert state_of(group) == before


def test_update_group__own_name__200(admin_client, group):
    response = put(admin_client, group.pk, {"name": "platform", "description": "new"})

    assert response.status_code == 200, response.content
    assert response.json()["name"] == "platform"


def test_save_unique_name__concurrent_rename__409(group):
    """The race the pre-check cannot see: the unique constraint's error is the same 409."""
    GroupFactory(name="taken")
    group.name = "taken"

    with pytest.raises(services.NameExistsError, match="Group name already exists"):
        services._save_unique_name(group, update_fields=["name"])

    assert Group.objects.get(pk=group.pk).name == "platform"


# --- SCIM ------------------------------------------------------------------------------------

SCIM_NAME = (
    "The `/body/name` property cannot be changed: the group is managed by SCIM, which owns "
    "its name."
)
SCIM_USERS = (
    "The `/body/users` property cannot be changed: the group is managed by SCIM, which owns "
    "its members."
)


@pytest.fixture
def scim_group(db):
    group = GroupFactory(name="scim-team", scim_id="b7c3-scim", root_role_id=Role.VIEWER)
    member = UserFactory()
    GroupMembershipFactory(group=group, user=member)
    other = UserFactory()
    group.member, group.other = member, other
    return group


@pytest.mark.parametrize(
    ("change", "details"),
    [
        pytest.param({"name": "renamed"}, [("/body/name", SCIM_NAME)], id="name"),
        pytest.param({"users": "other"}, [("/body/users", SCIM_USERS)], id="members-added"),
        pytest.param({"users": "none"}, [("/body/users", SCIM_USERS)], id="members-removed"),
        pytest.param(
            {"name": "renamed", "users": "other"},
            [("/body/name", SCIM_NAME), ("/body/users", SCIM_USERS)],
            id="name-and-members",
        ),
    ],
)
def test_update_group__scim_group_name_or_members__400(admin_client, scim_group, change, details):
    users = {
        "member": [{"user": {"id": scim_group.member.pk}}],
        "other": [{"user": {"id": scim_group.member.pk}}, {"user": {"id": scim_group.other.pk}}],
        "none": [],
    }
    body = {"name": "scim-team", "users": users["member"]}
    body.update({k: users[v] if k == "users" else v for k, v in change.items()})
    before = state_of(scim_group)

    response = put(admin_client, scim_group.pk, body)

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [{"path": p, "message": m} for p, m in details]
    assert state_of(scim_group) == before


def test_update_group__scim_group_description_and_root_role__200(admin_client, scim_group):
    response = put(
        admin_client,
        scim_group.pk,
        {
            "name": "scim-team",
            "description": "Synced from the IdP",
            "rootRole": Role.EDITOR,
            "users": [{"user": {"id": scim_group.member.pk}}],
        },
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["description"], body["rootRole"], body["scimId"]) == (
        "Synced from the IdP",
        Role.EDITOR,
        "b7c3-scim",
    )
    assert [u["user"]["id"] for u in body["users"]] == [scim_group.member.pk]


def test_update_group__scim_group_renamed_to_taken_name__400_before_409(admin_client, scim_group):
    GroupFactory(name="taken")

    response = put(
        admin_client,
        scim_group.pk,
        {"name": "taken", "users": [{"user": {"id": scim_group.member.pk}}]},
    )

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [{"path": "/body/name", "message": SCIM_NAME}]


# --- audit -----------------------------------------------------------------------------------


def test_update_group__audit_event_with_user_ids_before_and_after(admin_client, group):
    alice, bob, carol = UserFactory(), UserFactory(), UserFactory()
    GroupMembershipFactory(group=group, user=alice)
    GroupMembershipFactory(group=group, user=bob)

    response = put(
        admin_client,
        group.pk,
        {"name": "platform", "users": [{"user": {"id": carol.pk}}, {"user": {"id": alice.pk}}]},
    )

    assert response.status_code == 200, response.content
    event = AuditEvent.objects.get(type="group-updated")
    assert (event.created_by, event.created_by_user_id) == ("admin-tok", -42)
    created_at = response.json()["createdAt"]
    assert event.pre_data == {
        "id": group.pk,
        "name": "platform",
        "description": "The platform team",
        "mappingsSSO": ["platform-sso"],
        "rootRole": Role.VIEWER,
        "createdBy": "admin@example.com",
        "createdAt": created_at,
        "scimId": None,
        "users": sorted([alice.pk, bob.pk]),
    }
    assert event.data == event.pre_data | {
        "description": None,
        "mappingsSSO": [],
        "rootRole": None,
        "users": sorted([alice.pk, carol.pk]),
    }


def test_update_group__no_op__no_audit_event(admin_client, group):
    alice, bob = UserFactory(), UserFactory()
    GroupMembershipFactory(group=group, user=alice)
    GroupMembershipFactory(group=group, user=bob)
    same = {
        "name": "platform",
        "description": "The platform team",
        "mappingsSSO": ["platform-sso"],
        "rootRole": Role.VIEWER,
        # Another order of the same members is not a change.
        "users": [{"user": {"id": bob.pk}}, {"user": {"id": alice.pk}}],
    }
    before = state_of(group)

    response = put(admin_client, group.pk, same)

    assert response.status_code == 200, response.content
    assert not AuditEvent.objects.filter(type="group-updated").exists()
    assert state_of(group) == before


# --- who may, and the order of the checks ----------------------------------------------------


def test_update_group__anonymous__401(anon_client, group):
    assert_error(put(anon_client, group.pk, {"name": "x"}), 401, "AuthenticationRequired")


def test_update_group__anonymous_unknown_id__401(anon_client, db):
    assert_error(put(anon_client, "abc", {"name": "x"}), 401, "AuthenticationRequired")


@pytest.mark.parametrize("principal", ["viewer_client", "editor_client", "client_token_client"])
def test_update_group__without_admin__403(request, group, principal):
    client = request.getfixturevalue(principal)
    before = state_of(group)

    error = assert_error(put(client, group.pk, {"name": "x"}), 403, "NoAccessError")

    assert error["permissions"] == ["ADMIN"]
    assert state_of(group) == before


def test_update_group__viewer_with_wrong_content_type__403_before_415(viewer_client, group):
    response = viewer_client.put(f"/api/admin/groups/{group.pk}", "x", content_type="text/plain")

    assert_error(response, 403, "NoAccessError")


@pytest.mark.parametrize(
    ("content_type", "shown"),
    [
        pytest.param("text/plain", "text/plain", id="text-plain"),
        pytest.param("", "you didn't provide one", id="missing"),
    ],
)
def test_update_group__wrong_content_type__415(admin_client, group, content_type, shown):
    # generic() sends the body as it is, with exactly this Content-Type (none when empty).
    response = admin_client.generic(
        "PUT", f"/api/admin/groups/{group.pk}", '{"name": "x"}', content_type=content_type
    )

    error = assert_error(response, 415, "ContentTypeerror")
    assert f"({shown})" in error["message"]


def test_update_group__json_with_charset__200(admin_client, group):
    response = admin_client.put(
        f"/api/admin/groups/{group.pk}",
        '{"name": "platform"}',
        content_type="application/json; charset=utf-8",
    )

    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    "group_id",
    [
        pytest.param("424242", id="unknown-number"),
        pytest.param("abc", id="non-numeric"),
        pytest.param("-1", id="negative"),
        pytest.param("1.0", id="fraction"),
        pytest.param("99999999999999999999", id="beyond-64-bits"),
    ],
)
def test_update_group__unknown_id__404(admin_client, db, group_id):
    error = assert_error(put(admin_client, group_id, {"name": "x"}), 404, "NotFoundError")

    assert error["message"] == "No group found"


def test_update_group__unknown_id_and_invalid_body__400_before_404(admin_client, db):
    error = assert_error(put(admin_client, "abc", {"name": ""}), 400, "ValidationError")

    assert error["details"][0]["path"] == "/body/name"


def test_update_group__unknown_id_and_unknown_user__400_before_404(admin_client, db):
    body = {"name": "x", "users": [{"user": {"id": 999_999}}]}

    assert_error(put(admin_client, 424242, body), 400, "ValidationError")


def test_update_group__unknown_id_and_taken_name__404_before_409(admin_client, db):
    GroupFactory(name="taken")

    assert_error(put(admin_client, 424242, {"name": "taken"}), 404, "NotFoundError")


def test_update_group__patch__405(admin_client, group):
    response = admin_client.patch(f"/api/admin/groups/{group.pk}", {"name": "x"}, format="json")

    assert_error(response, 405, "MethodNotAllowedError")


def test_update_group__name_only_white_space__400(admin_client, group):
    response = put(admin_client, group.pk, {"name": "   "})

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [
        {
            "path": "/body/name",
            "message": 'The `/body/name` property must not be blank. You sent "   ".',
        }
    ]


@pytest.mark.parametrize("members", [1, 40])
def test_put__query_count_is_constant(admin_client, django_assert_max_num_queries, members):
    """Token, body's users, the group locked, the users held, (PostgreSQL) the members'
    lock, its members, the write, the event, the answer's three reads (and the transaction's
    own statements): whatever the number of members, and no savepoint when the name stays."""
    group = GroupFactory(name="constant")
    users = UserFactory.create_batch(members)
    body = {"name": "constant", "users": [{"user": {"id": user.pk}} for user in users]}
    put(admin_client, group.pk, body)  # the members join; the token's first use is recorded

    with django_assert_max_num_queries(13 if connection.vendor == "postgresql" else 12):
        response = put(admin_client, group.pk, body | {"description": "changed"})

    assert response.status_code == 200
    assert response.json()["userCount"] == members


@pytest.mark.parametrize("method", ["put", "delete"])
@pytest.mark.parametrize("group_id", ["abc", "0", "99999999999999999999"])
def test_write_group__id_no_group_can_have__404_without_a_transaction(
    admin_client, django_assert_num_queries, monkeypatch, method, group_id
):
    """No query but the token's, and no transaction opened: on SQLite a transaction first
    waits for the write lock, which any other writer may be holding."""
    admin_client.get("/api/admin/groups")  # the token's first use is recorded beforehand
    opened = []
    real_atomic = transaction.atomic
    monkeypatch.setattr(
        transaction, "atomic", lambda *a, **kw: opened.append(1) or real_atomic(*a, **kw)
    )

    with django_assert_num_queries(1) as captured:
        response = getattr(admin_client, method)(
            f"/api/admin/groups/{group_id}", {"name": "x"}, format="json"
        )

    assert_error(response, 404, "NotFoundError")
    assert [statement.table for statement in trace(captured)] == ["flagadmin_apitoken"]
    assert opened == []
