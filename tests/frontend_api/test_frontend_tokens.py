"""Frontend tokens (Unleash's `frontend` type): made, listed, scoped and revoked through the
admin API and the Django admin; they reach /api/frontend and nothing else, and no other kind
of token reaches /api/frontend. Statuses and messages as Unleash 8.2 answers them (measured on
the reference: 401 and 403 with these messages, the token refused on the admin and client
APIs)."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from evaluation.engine import clear_engines
from flagadmin.api.sdk_tokens import WRONG_TOKEN_TYPE
from flagadmin.core.models import ApiToken, AuditEvent, Role, TokenType
from frontend_api.authentication import NO_TOKEN, forget_tokens
from tests.conftest import assert_error
from tests.factories import ProjectFactory, UserFactory, make_token

TOKENS = "/api/admin/api-tokens"
FRONTEND = "/api/frontend"


@pytest.fixture(autouse=True)
def fresh_frontend_memory():
    forget_tokens()
    clear_engines()
    yield
    forget_tokens()
    clear_engines()


def _with(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=token)
    return client


def _create(admin_client: APIClient, body: dict):
    return admin_client.post(TOKENS, body, format="json")


@pytest.mark.parametrize("sent", ["frontend", "FRONTEND", "Frontend"])
def test_create_api_token__frontend_in_any_case__frontend_token(admin_client, sent):
    response = _create(
        admin_client,
        {"tokenName": "web", "type": sent, "projects": ["default"], "environment": "production"},
    )

    assert response.status_code == 201, response.content
    body = response.json()
    token = ApiToken.objects.get(name="web")
    assert body == {
        "tokenName": "web",
        "type": "frontend",
        "project": "default",
        "projects": ["default"],
        "environment": "production",
        "expiresAt": None,
        "createdAt": token.created_at.isoformat().replace("+00:00", "Z"),
        "seenAt": None,
        "secret": body["secret"],
    }
    assert body["secret"].startswith("default:production.")
    assert (token.type, token.project, token.environment) == ("frontend", "default", "production")
    assert token.digest == ApiToken.digest_of(body["secret"])
    event = AuditEvent.objects.get(type="api-token-created")
    assert body["secret"] not in str(event.data)


def test_create_api_token__frontend_defaults__every_project_in_development(admin_client):
    body = _create(admin_client, {"tokenName": "web", "type": "frontend"}).json()

    assert (body["project"], body["projects"], body["environment"]) == ("*", ["*"], "development")
    assert body["secret"].startswith("*:development.")


def test_create_api_token__frontend_several_projects(admin_client):
    ProjectFactory(id="shop")

    body = _create(
        admin_client, {"tokenName": "web", "type": "frontend", "projects": ["default", "shop"]}
    ).json()

    assert (body["project"], body["projects"]) == ("[]", ["default", "shop"])
    assert body["secret"].startswith("[]:development.")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"environment": "nope"}, "/body/environment", id="unknown-environment"),
        pytest.param({"environment": "*"}, "/body/environment", id="every-environment"),
        pytest.param({"projects": ["nope"]}, "/body/projects/0", id="unknown-project"),
        pytest.param({"projects": []}, "/body/projects", id="no-project"),
    ],
)
def test_create_api_token__frontend_bad_scope__400(admin_client, body, path):
    response = _create(admin_client, {"tokenName": "web", "type": "frontend", **body})

    error = assert_error(response, 400, "ValidationError")
    assert [detail["path"] for detail in error["details"]] == [path]
    assert not ApiToken.objects.filter(type=TokenType.FRONTEND).exists()


def test_list_api_tokens__frontend_tokens_listed(admin_client):
    make_token(TokenType.FRONTEND, name="web", projects=["default"], environment="production")

    body = admin_client.get(TOKENS).json()

    listed = [token for token in body["tokens"] if token["tokenName"] == "web"]
    assert [(t["type"], t["projects"], t["environment"]) for t in listed] == [
        ("frontend", ["default"], "production")
    ]


def test_project_api_tokens__frontend_token_made_and_listed(admin_client):
    response = admin_client.post(
        "/api/admin/projects/default/api-tokens",
        {"tokenName": "web", "type": "Frontend", "environment": "development"},
        format="json",
    )

    assert response.status_code == 201, response.content
    assert response.json()["type"] == "frontend"
    assert response.json()["secret"].startswith("default:development.")
    listed = admin_client.get("/api/admin/projects/default/api-tokens").json()["tokens"]
    assert [(t["tokenName"], t["type"]) for t in listed] == [("web", "frontend")]


def test_frontend_token__reaches_the_frontend_api_only(admin_client):
    secret = _create(admin_client, {"tokenName": "web", "type": "frontend"}).json()["secret"]
    browser = _with(secret)

    assert browser.get(FRONTEND).status_code == 200
    for path in ("/api/admin/projects", "/api/admin/api-tokens", "/api/admin/nope"):
        assert_error(browser.get(path), 403, "NoAccessError")
    refused = assert_error(browser.get("/api/client/features"), 403, "NoAccessError")
    assert refused["message"] == WRONG_TOKEN_TYPE


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(TokenType.CLIENT, id="client"),
        pytest.param(TokenType.ADMIN, id="admin"),
    ],
)
def test_frontend_api__other_kinds_of_token__403(db, kind):
    secret = make_token(kind, projects=["*"])[1]

    for response in (
        _with(secret).get(FRONTEND),
        _with(secret).post(FRONTEND, {}, format="json"),
        _with(secret).post(f"{FRONTEND}/client/metrics", {"appName": "a"}, format="json"),
    ):
        error = assert_error(response, 403, "NoAccessError")
        assert error["message"] == WRONG_TOKEN_TYPE


def test_frontend_api__personal_token__403(db):
    user = UserFactory(root_role_id=Role.ADMIN)
    secret = make_token(TokenType.PERSONAL, user=user)[1]

    error = assert_error(_with(secret).get(FRONTEND), 403, "NoAccessError")
    assert error["message"] == WRONG_TOKEN_TYPE


@pytest.mark.parametrize(
    "header",
    [
        pytest.param(None, id="none"),
        pytest.param("", id="empty"),
        pytest.param("*:development.nope", id="unknown"),
        pytest.param("Bearer ", id="bearer-only"),
    ],
)
def test_frontend_api__no_valid_token__401(db, header):
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)

    error = assert_error(client.get(FRONTEND), 401, "AuthenticationRequired")
    assert error["message"] == NO_TOKEN


def test_frontend_token__deleted__refused_once_its_lookup_is_not_reused(admin_client, settings):
    settings.CLIENT_API_REUSE_SECONDS = 0
    secret = _create(admin_client, {"tokenName": "web", "type": "frontend"}).json()["secret"]
    assert _with(secret).get(FRONTEND).status_code == 200

    assert admin_client.delete(f"{TOKENS}/{secret}").status_code == 200

    assert_error(_with(secret).get(FRONTEND), 401, "AuthenticationRequired")
    assert not ApiToken.objects.filter(name="web").exists()


def test_frontend_token__expired_by_update__refused(admin_client, settings):
    settings.CLIENT_API_REUSE_SECONDS = 0
    secret = _create(admin_client, {"tokenName": "web", "type": "frontend"}).json()["secret"]

    response = admin_client.put(
        f"{TOKENS}/{secret}", {"expiresAt": "2001-01-01T00:00:00Z"}, format="json"
    )

    assert response.status_code == 200
    assert_error(_with(secret).get(FRONTEND), 401, "AuthenticationRequired")


def test_frontend_token__lookup_reused_within_the_reuse_window(admin_client, settings):
    settings.CLIENT_API_REUSE_SECONDS = 60
    secret = _create(admin_client, {"tokenName": "web", "type": "frontend"}).json()["secret"]
    assert _with(secret).get(FRONTEND).status_code == 200

    ApiToken.objects.filter(name="web").delete()

    # As the client API: a worker reuses a lookup for CLIENT_API_REUSE_SECONDS.
    assert _with(secret).get(FRONTEND).status_code == 200
    forget_tokens()
    assert_error(_with(secret).get(FRONTEND), 401, "AuthenticationRequired")


@pytest.fixture
def staff(db) -> Client:
    user = UserFactory(username="boss", root_role_id=Role.ADMIN)
    client = Client()
    client.force_login(user)
    return client


def test_admin__add_frontend_token__scoped_and_usable(staff):
    response = staff.post(
        "/admin/flagadmin/apitoken/add/",
        {
            "name": "web",
            "type": "frontend",
            "project": "default",
            "environment": "production",
            "user": "",
            "expires_at_0": "",
            "expires_at_1": "",
        },
    )

    token = ApiToken.objects.get(name="web")
    assert response.status_code == 302, response.content
    plaintext = staff.get(response["Location"]).context["plaintext"]
    assert plaintext.startswith("default:production.")
    assert (token.type, token.project, token.environment) == ("frontend", "default", "production")
    assert _with(plaintext).get(FRONTEND).status_code == 200


def test_admin__add_frontend_token__unknown_environment_refused(staff):
    response = staff.post(
        "/admin/flagadmin/apitoken/add/",
        {"name": "web", "type": "frontend", "project": "default", "environment": "nope"},
    )

    assert response.status_code == 200
    assert "Unknown environment." in response.content.decode()
    assert not ApiToken.objects.filter(name="web").exists()


def test_admin__revoke_frontend_token(staff, settings):
    settings.CLIENT_API_REUSE_SECONDS = 0
    token, secret = make_token(TokenType.FRONTEND, name="web", projects=["*"])

    staff.post("/admin/flagadmin/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})

    token.refresh_from_db()
    assert token.revoked_at is not None
    assert_error(_with(secret).get(FRONTEND), 401, "AuthenticationRequired")
