"""POST and GET /api/admin/user-admin: create people and list them."""

from __future__ import annotations

import pytest

from flagadmin.core.models import AccountType, AuditEvent, Role, RoleType, User
from tests.conftest import assert_error
from tests.factories import UserFactory

URL = "/api/admin/user-admin"
ROOT_ROLE = (
    "must be the id or the name of a root role (1 or Admin, 2 or Editor, 3 or Viewer, "
    "or a custom root role)"
)


def post(client, body, **kwargs):
    return client.post(URL, body, format="json", **kwargs)


def _detail(path: str, predicate: str, sent: str) -> dict:
    return {"path": path, "message": f"The `{path}` property {predicate}. You sent {sent}."}


# --- POST ------------------------------------------------------------------------------------


def test_create_user__201_with_user(admin_client, db):
    response = post(
        admin_client,
        {"email": "Ada@Example.com", "name": "Ada Lovelace", "username": "ada", "rootRole": 2},
    )

    assert response.status_code == 201, response.content
    user = User.objects.get(username="ada")
    body = response.json()
    assert body == {
        "id": user.pk,
        "isAPI": False,
        "name": "Ada Lovelace",
        "email": "Ada@Example.com",
        "username": "ada",
        "imageUrl": "",
        "loginAttempts": 0,
        "emailSent": False,
        "rootRole": Role.EDITOR,
        "seenAt": None,
        "createdAt": body["createdAt"],
        "accountType": "User",
        "scimId": None,
    }
    assert user.root_role_id == Role.EDITOR
    assert not user.has_usable_password()


@pytest.mark.parametrize(
    ("root_role", "expected"),
    [
        pytest.param("Admin", Role.ADMIN, id="name-admin"),
        pytest.param("Editor", Role.EDITOR, id="name-editor"),
        pytest.param("Viewer", Role.VIEWER, id="name-viewer"),
        pytest.param(3, Role.VIEWER, id="id-viewer"),
    ],
)
def test_create_user__root_role_by_id_or_name(admin_client, db, root_role, expected):
    response = post(admin_client, {"email": "a@example.com", "rootRole": root_role})

    assert response.status_code == 201, response.content
    assert response.json()["rootRole"] == expected


def test_create_user__custom_root_role_by_name(admin_client, db):
    custom = Role.objects.create(name="Auditor", type=RoleType.ROOT_CUSTOM)

    response = post(admin_client, {"username": "audit", "rootRole": "Auditor"})

    assert response.status_code == 201, response.content
    assert response.json()["rootRole"] == custom.pk


def test_create_user__username_only__201(admin_client, db):
    response = post(admin_client, {"username": "robot", "rootRole": "Viewer"})

    assert response.status_code == 201, response.content
    assert (response.json()["email"], response.json()["username"]) == (None, "robot")


def test_create_user__with_password__can_sign_in(admin_client, db):
    response = post(
        admin_client,
        {"email": "p@example.com", "rootRole": 1, "password": "correct horse battery staple"},
    )

    assert response.status_code == 201, response.content
    assert "password" not in response.json()
    user = User.objects.get(email="p@example.com")
    assert user.check_password("correct horse battery staple")


def test_create_user__audit_event(admin_client, db):
    response = post(admin_client, {"email": "a@example.com", "name": "A", "rootRole": 3})

    event = AuditEvent.objects.get(type="user-created")
    assert (event.created_by, event.created_by_user_id) == ("admin-tok", -42)
    assert event.data == {
        "id": response.json()["id"],
        "name": "A",
        "email": "a@example.com",
        "username": None,
        "rootRole": Role.VIEWER,
    }


@pytest.mark.parametrize(
    ("body", "details"),
    [
        pytest.param(
            {"name": "Nobody", "rootRole": 2},
            [
                {
                    "path": "/body",
                    "message": "The body must contain `email` or `username` (or both): a user "
                    "needs one of them to be found and to sign in.",
                }
            ],
            id="neither-email-nor-username",
        ),
        pytest.param(
            {"email": None, "username": None, "rootRole": 2},
            [
                {
                    "path": "/body",
                    "message": "The body must contain `email` or `username` (or both): a user "
                    "needs one of them to be found and to sign in.",
                }
            ],
            id="both-null",
        ),
        pytest.param(
            {"email": "not-an-email", "rootRole": 2},
            [_detail("/body/email", 'must match format "email"', '"not-an-email"')],
            id="invalid-email",
        ),
        pytest.param(
            {"email": 5, "rootRole": 2},
            [_detail("/body/email", "must be string", "5")],
            id="email-number",
        ),
        pytest.param(
            {"username": "", "rootRole": 2},
            [_detail("/body/username", "must NOT have fewer than 1 characters", '""')],
            id="username-empty",
        ),
        pytest.param(
            {"email": "a@example.com"},
            [
                {
                    "path": "/body/rootRole",
                    "message": "The `/body/rootRole` property is required. It was not present "
                    "on the data you sent.",
                }
            ],
            id="rootRole-missing",
        ),
        pytest.param(
            {"email": "a@example.com", "rootRole": Role.OWNER},
            [_detail("/body/rootRole", ROOT_ROLE, "4")],
            id="rootRole-project-role-id",
        ),
        pytest.param(
            {"email": "a@example.com", "rootRole": "Owner"},
            [_detail("/body/rootRole", ROOT_ROLE, '"Owner"')],
            id="rootRole-project-role-name",
        ),
        pytest.param(
            {"email": "a@example.com", "rootRole": "editor"},
            [_detail("/body/rootRole", ROOT_ROLE, '"editor"')],
            id="rootRole-name-wrong-case",
        ),
        pytest.param(
            {"email": "a@example.com", "rootRole": True},
            [_detail("/body/rootRole", ROOT_ROLE, "true")],
            id="rootRole-boolean",
        ),
        pytest.param(
            {"email": "a@example.com", "rootRole": None},
            [_detail("/body/rootRole", ROOT_ROLE, "null")],
            id="rootRole-null",
        ),
        pytest.param(
            {"email": "a@example.com", "rootRole": 2, "sendEmail": "yes"},
            [_detail("/body/sendEmail", "must be boolean", '"yes"')],
            id="sendEmail-string",
        ),
    ],
)
def test_create_user__invalid_body__400(admin_client, db, body, details):
    count = User.objects.count()

    error = assert_error(post(admin_client, body), 400, "ValidationError")

    assert error["details"] == details
    assert User.objects.count() == count


@pytest.mark.parametrize(
    "password",
    [pytest.param("x7Q!", id="too-short"), pytest.param("password123", id="too-common")],
)
def test_create_user__weak_password__400_without_echoing_it(admin_client, db, password):
    response = post(admin_client, {"email": "a@example.com", "rootRole": 2, "password": password})

    error = assert_error(response, 400, "ValidationError")
    assert [d["path"] for d in error["details"]] == ["/body/password"]
    assert error["details"][0]["message"].startswith("The password is not accepted: ")
    assert password not in response.content.decode()


@pytest.mark.parametrize(
    ("existing", "body", "message"),
    [
        pytest.param(
            {"email": "ada@example.com"},
            {"email": "ADA@example.COM"},
            "A user with that email already exists",
            id="email-other-case",
        ),
        pytest.param(
            {"username": "ada"},
            {"username": "ada"},
            "A user with that username already exists",
            id="username",
        ),
        pytest.param(
            {"username": "Ada"},
            {"username": "aDA"},
            "A user with that username already exists",
            id="username-other-case",
        ),
        pytest.param(
            {"username": "ada@example.com", "email": None},
            {"email": "ada@example.com"},
            "A user with that email already exists",
            id="email-used-as-a-username",
        ),
    ],
)
def test_create_user__taken__409(admin_client, db, existing, body, message):
    UserFactory(**existing)
    count = User.objects.count()

    response = post(admin_client, body | {"rootRole": 2})

    error = assert_error(response, 409, "NameExistsError")
    assert error["message"] == message
    assert User.objects.count() == count
    assert not AuditEvent.objects.filter(type="user-created").exists()


def test_create_user__anonymous__401(anon_client, db):
    assert_error(
        post(anon_client, {"email": "a@example.com", "rootRole": 2}), 401, "AuthenticationRequired"
    )


@pytest.mark.parametrize("principal", ["viewer_client", "editor_client", "client_token_client"])
def test_create_user__without_admin__403(request, db, principal):
    client = request.getfixturevalue(principal)

    error = assert_error(
        post(client, {"email": "a@example.com", "rootRole": 1}), 403, "NoAccessError"
    )

    assert error["permissions"] == ["ADMIN"]
    assert not User.objects.filter(email="a@example.com").exists()


def test_create_user__wrong_content_type__415(admin_client, db):
    response = admin_client.post(URL, "email=a@example.com", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


# --- GET -------------------------------------------------------------------------------------


def test_list_users__people_only(admin_user_client, db):
    # Given people, a service account, and the seeded system users
    ada = UserFactory(username="ada")
    UserFactory(username="svc", account_type=AccountType.SERVICE)
    assert User.objects.filter(account_type=AccountType.SYSTEM).count() == 2

    response = admin_user_client.get(URL)

    assert response.status_code == 200, response.content
    body = response.json()
    assert [u["id"] for u in body["users"]] == sorted([admin_user_client.user.pk, ada.pk])
    listed = next(u for u in body["users"] if u["id"] == ada.pk)
    assert (listed["username"], listed["email"], listed["rootRole"]) == (
        "ada",
        ada.email,
        Role.EDITOR,
    )
    assert [(r["id"], r["name"]) for r in body["rootRoles"]] == [
        (1, "Admin"),
        (2, "Editor"),
        (3, "Viewer"),
    ]


def test_list_users__query_count_does_not_grow(admin_client, db, django_assert_max_num_queries):
    UserFactory.create_batch(20)
    admin_client.get(URL)  # the token's throttled last_used_at write

    with django_assert_max_num_queries(3):
        response = admin_client.get(URL)

    assert len(response.json()["users"]) == 20


def test_list_users__anonymous__401(anon_client, db):
    assert_error(anon_client.get(URL), 401, "AuthenticationRequired")


@pytest.mark.parametrize("principal", ["viewer_client", "client_token_client"])
def test_list_users__without_admin__403(request, db, principal):
    client = request.getfixturevalue(principal)

    assert_error(client.get(URL), 403, "NoAccessError")
