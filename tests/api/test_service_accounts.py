"""POST /api/admin/service-account and POST /api/admin/service-account/:id/token."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import authenticate
from django.utils import timezone

from flagadmin.core.models import AccountType, ApiToken, AuditEvent, Role, TokenType, User
from tests.conftest import assert_error
from tests.factories import UserFactory

URL = "/api/admin/service-account"


def _create_account(client, **overrides) -> dict:
    body = {"username": "deployer", "name": "Deploy bot", "rootRole": Role.EDITOR, **overrides}
    response = client.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _token_url(account_id) -> str:
    return f"{URL}/{account_id}/token"


# --- POST /service-account ------------------------------------------------------------------


def test_create_service_account__201(admin_client):
    body = _create_account(admin_client)

    account = User.objects.get(pk=body["id"])
    assert body == {
        "id": account.pk,
        "isAPI": True,
        "name": "Deploy bot",
        "email": None,
        "username": "deployer",
        "imageUrl": "",
        "loginAttempts": 0,
        "emailSent": False,
        "rootRole": Role.EDITOR,
        "seenAt": None,
        "createdAt": account.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "accountType": "Service Account",
        "scimId": None,
    }
    assert account.account_type == AccountType.SERVICE
    assert not account.has_usable_password()


def test_create_service_account__cannot_sign_in(admin_client):
    account = User.objects.get(pk=_create_account(admin_client)["id"])
    account.set_password("a-password-someone-set")  # even with a password set by mistake
    account.save()

    assert authenticate(username="deployer", password="a-password-someone-set") is None


def test_create_service_account__records_audit_event(admin_client):
    body = _create_account(admin_client)

    event = AuditEvent.objects.get(type="service-account-created")
    assert (event.created_by, event.created_by_user_id) == ("admin-tok", -42)
    assert event.data == {
        "id": body["id"],
        "username": "deployer",
        "name": "Deploy bot",
        "rootRole": Role.EDITOR,
    }


def test_create_service_account__username_taken_any_case__409(admin_client):
    UserFactory(username="Deployer")

    response = admin_client.post(
        URL, {"username": "deployer", "name": "x", "rootRole": 3}, format="json"
    )

    body = assert_error(response, 409, "NameExistsError")
    assert body["message"] == "A user with that username already exists"
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "path", "message"),
    [
        pytest.param(
            {"rootRole": Role.OWNER},
            "/body/rootRole",
            "The `/body/rootRole` property must be the id of a root role. You sent 4.",
            id="project-role",
        ),
        pytest.param(
            {"rootRole": 999},
            "/body/rootRole",
            "The `/body/rootRole` property must be the id of a root role. You sent 999.",
            id="unknown-role",
        ),
        pytest.param(
            {"rootRole": 2**70},
            "/body/rootRole",
            f"The `/body/rootRole` property must be <= {2**63 - 1}. You sent {2**70}.",
            id="role-beyond-bigint",
        ),
        pytest.param(
            {"rootRole": "3"},
            "/body/rootRole",
            'The `/body/rootRole` property must be integer. You sent "3".',
            id="role-string",
        ),
        pytest.param(
            {"username": ""},
            "/body/username",
            'The `/body/username` property must NOT have fewer than 1 characters. You sent "".',
            id="username-empty",
        ),
        pytest.param(
            {"name": None},
            "/body/name",
            "The `/body/name` property must be string. You sent null.",
            id="name-null",
        ),
    ],
)
def test_create_service_account__invalid__400(admin_client, overrides, path, message):
    body = {"username": "deployer", "name": "Deploy bot", "rootRole": 2, **overrides}

    error = assert_error(admin_client.post(URL, body, format="json"), 400, "ValidationError")

    assert error["details"] == [{"path": path, "message": message}]
    assert not User.objects.filter(account_type=AccountType.SERVICE).exists()


def test_create_service_account__missing_fields__400(admin_client):
    error = assert_error(admin_client.post(URL, {}, format="json"), 400, "ValidationError")

    assert [d["path"] for d in error["details"]] == [
        "/body/username",
        "/body/name",
        "/body/rootRole",
    ]


def test_create_service_account__anonymous__401(anon_client, db):
    assert_error(anon_client.post(URL, {}, format="json"), 401, "AuthenticationRequired")


@pytest.mark.parametrize("fixture", ["viewer_client", "editor_client", "client_token_client"])
def test_create_service_account__not_admin__403(db, request, fixture):
    client = request.getfixturevalue(fixture)
    body = {"username": "deployer", "name": "x", "rootRole": 1}

    assert_error(client.post(URL, body, format="json"), 403, "NoAccessError")
    assert not User.objects.filter(username="deployer").exists()


def test_create_service_account__wrong_content_type__415(admin_client):
    response = admin_client.post(URL, "username=deployer", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


# --- POST /service-account/:id/token --------------------------------------------------------


def test_create_service_account_token__201_secret_once(admin_client):
    account_id = _create_account(admin_client)["id"]
    expires = (timezone.now() + timedelta(days=7)).replace(microsecond=0)

    response = admin_client.post(
        _token_url(account_id),
        {"description": "deploys", "expiresAt": expires.isoformat()},
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    token = ApiToken.objects.get(pk=body["id"])
    assert body == {
        "id": token.pk,
        "secret": body["secret"],
        "description": "deploys",
        "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "createdAt": token.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "seenAt": None,
        "userId": account_id,
    }
    assert body["secret"].startswith("user:")
    assert (token.type, token.user_id) == (TokenType.PERSONAL, account_id)
    assert token.digest == ApiToken.digest_of(body["secret"])
    assert body["secret"][5:] not in str(ApiToken.objects.filter(pk=token.pk).values().get())
    event = AuditEvent.objects.get(type="service-account-token-created")
    assert event.data == {
        "id": token.pk,
        "description": "deploys",
        "userId": account_id,
        "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert body["secret"][5:] not in str(event.data)


def test_create_service_account_token__without_expiry__never_expires(admin_client):
    account_id = _create_account(admin_client)["id"]

    body = admin_client.post(_token_url(account_id), {"description": "d"}, format="json").json()

    assert body["expiresAt"] is None


@pytest.mark.parametrize(
    ("role", "status"),
    [
        pytest.param(Role.VIEWER, 403, id="viewer"),
        pytest.param(Role.EDITOR, 403, id="editor"),
        pytest.param(Role.ADMIN, 200, id="admin"),
    ],
)
def test_service_account_token__acts_with_the_root_role(admin_client, anon_client, role, status):
    account_id = _create_account(admin_client, rootRole=role)["id"]
    secret = admin_client.post(_token_url(account_id), {"description": "d"}, format="json")
    anon_client.credentials(HTTP_AUTHORIZATION=secret.json()["secret"])

    response = anon_client.get("/api/admin/api-tokens")

    assert response.status_code == status
    if status == 403:
        assert_error(response, 403, "NoAccessError")


@pytest.mark.parametrize(
    "account_id",
    [
        pytest.param("999999", id="unknown"),
        pytest.param(str(2**64), id="beyond-bigint"),
        pytest.param("-42", id="system-user"),
        pytest.param("abc", id="not-a-number"),
    ],
)
def test_create_service_account_token__unknown_account__404(admin_client, account_id):
    response = admin_client.post(_token_url(account_id), {"description": "d"}, format="json")

    assert_error(response, 404, "NotFoundError")
    assert not ApiToken.objects.filter(type=TokenType.PERSONAL).exists()


def test_create_service_account_token__person_not_service_account__404(admin_client):
    person = UserFactory()

    response = admin_client.post(_token_url(person.pk), {"description": "d"}, format="json")

    body = assert_error(response, 404, "NotFoundError")
    assert body["message"] == "No service account found"


def test_create_service_account_token__invalid_body_before_unknown_id__400(admin_client):
    response = admin_client.post(_token_url(999999), {"expiresAt": "nope"}, format="json")

    error = assert_error(response, 400, "ValidationError")
    assert [d["path"] for d in error["details"]] == ["/body/description", "/body/expiresAt"]


def test_create_service_account_token__anonymous__401(anon_client, db):
    response = anon_client.post(_token_url(1), {"description": "d"}, format="json")

    assert_error(response, 401, "AuthenticationRequired")


def test_create_service_account_token__viewer__403(viewer_client):
    response = viewer_client.post(_token_url(1), {"description": "d"}, format="json")

    assert assert_error(response, 403, "NoAccessError")["permissions"] == ["ADMIN"]


def test_create_service_account_token__wrong_content_type__415(admin_client):
    account_id = _create_account(admin_client)["id"]

    response = admin_client.post(_token_url(account_id), "description=d", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")
