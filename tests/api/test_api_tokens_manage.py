"""PUT and DELETE /api/admin/api-tokens/:token, and a project's client tokens
(GET/POST /api/admin/projects/:projectId/api-tokens, DELETE .../api-tokens/:token)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from flagadmin.core.models import ApiToken, AuditEvent, Role, TokenType
from tests.conftest import assert_error
from tests.factories import (
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
    make_token,
)

URL = "/api/admin/api-tokens"
FUTURE = "2999-01-02T03:04:05Z"


def _put(client, secret, body):
    return client.put(f"{URL}/{secret}", body, format="json")


def _sdk(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=secret)
    return client


# --- PUT /api/admin/api-tokens/:token ------------------------------------------------------


def test_update_api_token__new_expiry__200_no_body_and_event_without_secret(admin_client):
    token, secret = make_token(TokenType.CLIENT, name="sdk", projects=["default"])

    response = _put(admin_client, secret, {"expiresAt": FUTURE})

    assert response.status_code == 200
    assert response.content == b""
    token.refresh_from_db()
    assert token.expires_at == datetime(2999, 1, 2, 3, 4, 5, tzinfo=UTC)
    event = AuditEvent.objects.get(type="api-token-updated")
    assert (event.created_by, event.project, event.environment) == (
        "admin-tok",
        "default",
        "development",
    )
    common = {
        "id": token.pk,
        "tokenName": "sdk",
        "type": "client",
        "projects": ["default"],
        "environment": "development",
    }
    assert event.pre_data == {**common, "expiresAt": None}
    assert event.data == {**common, "expiresAt": "2999-01-02T03:04:05Z"}
    assert secret.split(".")[1] not in str(event.data) + str(event.pre_data)


def test_update_api_token__past_expiry__token_refused_from_next_request(admin_client):
    """Unleash accepts an expiry already past: it ends the token now."""
    _, secret = make_token(TokenType.ADMIN, name="ci")

    assert _put(admin_client, secret, {"expiresAt": "2001-01-01T00:00:00Z"}).status_code == 200

    assert_error(_sdk(secret).get(URL), 401, "AuthenticationRequired")


@pytest.mark.parametrize(
    "secret",
    [
        pytest.param("*:*.unknown", id="unknown"),
        pytest.param("nothing-like-a-token", id="not-a-token"),
    ],
)
def test_update_api_token__unknown_token__200_nothing_done(admin_client, secret):
    assert _put(admin_client, secret, {"expiresAt": FUTURE}).status_code == 200
    assert not AuditEvent.objects.filter(type="api-token-updated").exists()


def test_update_api_token__personal_token__200_nothing_done(admin_client):
    """Personal tokens are managed with their user or service account, not here."""
    token, secret = make_token(TokenType.PERSONAL, user=UserFactory())

    assert _put(admin_client, secret, {"expiresAt": FUTURE}).status_code == 200

    token.refresh_from_db()
    assert token.expires_at is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param({}, "The `/body/expiresAt` property is required.", id="missing"),
        pytest.param({"expiresAt": None}, 'must match format "date-time"', id="null"),
        pytest.param({"expiresAt": "nonsense"}, 'must match format "date-time"', id="text"),
        pytest.param({"expiresAt": 5}, 'must match format "date-time"', id="number"),
    ],
)
def test_update_api_token__invalid_body__400(admin_client, body, message):
    token, secret = make_token(TokenType.ADMIN, name="ci")

    error = assert_error(_put(admin_client, secret, body), 400, "ValidationError")

    assert error["details"][0]["path"] == "/body/expiresAt"
    assert message in error["details"][0]["message"]
    token.refresh_from_db()
    assert token.expires_at is None


def test_update_api_token__anonymous__401(anon_client, db):
    assert_error(_put(anon_client, "*:*.x", {"expiresAt": FUTURE}), 401, "AuthenticationRequired")


@pytest.mark.parametrize("fixture", ["viewer_client", "editor_client", "client_token_client"])
def test_update_api_token__without_admin__403(db, request, fixture):
    _, secret = make_token(TokenType.ADMIN, name="ci")
    client = request.getfixturevalue(fixture)

    assert_error(_put(client, secret, {"expiresAt": FUTURE}), 403, "NoAccessError")


def test_update_api_token__text_plain__415(admin_client):
    _, secret = make_token(TokenType.ADMIN, name="ci")

    response = admin_client.put(
        f"{URL}/{secret}", '{"expiresAt": "2999-01-01T00:00:00Z"}', content_type="text/plain"
    )

    assert_error(response, 415, "ContentTypeerror")


# --- DELETE /api/admin/api-tokens/:token ---------------------------------------------------


def test_delete_api_token__200_row_gone_event_without_secret(admin_client):
    token, secret = make_token(TokenType.CLIENT, name="sdk", projects=["default"])

    response = admin_client.delete(f"{URL}/{secret}")

    assert response.status_code == 200
    assert response.content == b""
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    event = AuditEvent.objects.get(type="api-token-deleted")
    assert (event.project, event.environment, event.data) == ("default", "development", None)
    assert event.pre_data == {
        "id": token.pk,
        "tokenName": "sdk",
        "type": "client",
        "projects": ["default"],
        "environment": "development",
        "expiresAt": None,
    }


def test_delete_api_token__admin_token_refused_from_next_request(admin_client):
    _, secret = make_token(TokenType.ADMIN, name="ci")
    assert _sdk(secret).get(URL).status_code == 200

    admin_client.delete(f"{URL}/{secret}")

    assert_error(_sdk(secret).get(URL), 401, "AuthenticationRequired")


def test_delete_api_token__token_deleting_itself__200(admin_client, admin_token):
    assert admin_client.delete(f"{URL}/{admin_token}").status_code == 200

    assert AuditEvent.objects.get(type="api-token-deleted").created_by == "admin-tok"
    assert_error(admin_client.get(URL), 401, "AuthenticationRequired")


@override_settings(CLIENT_API_REUSE_SECONDS=60)
def test_delete_api_token__client_api__refused_within_reuse_window(admin_client, monkeypatch):
    """A worker reuses a client token's lookup for CLIENT_API_REUSE_SECONDS: that is how much
    later, at most, a deletion reaches an SDK polling that worker."""
    _, secret = make_token(TokenType.CLIENT, name="sdk", projects=["*"])
    sdk = _sdk(secret)
    clock = [1000.0]
    # The reuse window is read from time.monotonic (the clock of the token lookups' cache).
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    assert sdk.get("/api/client/features").status_code == 200

    admin_client.delete(f"{URL}/{secret}")
    clock[0] += 59.9
    still_reused = sdk.get("/api/client/features").status_code
    clock[0] += 0.1
    after_window = sdk.get("/api/client/features")

    assert still_reused == 200
    assert_error(after_window, 401, "AuthenticationRequired")


def test_delete_api_token__unknown__200_nothing_done(admin_client):
    assert admin_client.delete(f"{URL}/*:*.unknown").status_code == 200
    assert not AuditEvent.objects.filter(type="api-token-deleted").exists()


def test_delete_api_token__any_content_type__200(admin_client):
    _, secret = make_token(TokenType.ADMIN, name="ci")

    response = admin_client.delete(f"{URL}/{secret}", "x", content_type="text/plain")

    assert response.status_code == 200


def test_delete_api_token__anonymous__401(anon_client, db):
    assert_error(anon_client.delete(f"{URL}/*:*.x"), 401, "AuthenticationRequired")


@pytest.mark.parametrize("fixture", ["viewer_client", "editor_client", "client_token_client"])
def test_delete_api_token__without_admin__403_token_kept(db, request, fixture):
    token, secret = make_token(TokenType.ADMIN, name="ci")

    assert_error(request.getfixturevalue(fixture).delete(f"{URL}/{secret}"), 403, "NoAccessError")

    assert ApiToken.objects.filter(pk=token.pk).exists()


# --- GET/POST /api/admin/projects/:projectId/api-tokens ------------------------------------


def _project_url(project="default"):
    return f"/api/admin/projects/{project}/api-tokens"


def test_project_api_tokens__lists_the_projects_client_tokens_only(admin_client):
    ProjectFactory(id="other")
    make_token(TokenType.CLIENT, name="mine", projects=["default"])
    shared, _ = make_token(TokenType.CLIENT, name="shared", projects=["other", "default"])
    make_token(TokenType.CLIENT, name="elsewhere", projects=["other"])
    make_token(TokenType.CLIENT, name="everything", projects=["*"])

    response = admin_client.get(_project_url())

    assert response.status_code == 200
    assert [t["tokenName"] for t in response.json()["tokens"]] == ["mine", "shared"]
    assert response.json()["tokens"][1] == {
        "tokenName": "shared",
        "type": "client",
        "project": "[]",
        "projects": ["other", "default"],
        "environment": "development",
        "expiresAt": None,
        "createdAt": shared.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "seenAt": None,
    }


def test_project_api_tokens__query_count_does_not_grow(admin_client, django_assert_max_num_queries):
    for index in range(5):
        make_token(TokenType.CLIENT, name=f"t{index}", projects=["default"])

    with django_assert_max_num_queries(4):
        assert len(admin_client.get(_project_url()).json()["tokens"]) == 5


def test_create_project_api_token__201_client_token_of_the_project(admin_client):
    response = admin_client.post(
        _project_url(), {"tokenName": "sdk", "type": "Backend"}, format="json"
    )

    assert response.status_code == 201, response.content
    body = response.json()
    token = ApiToken.objects.get(name="sdk")
    assert body == {
        "tokenName": "sdk",
        "type": "client",
        "project": "default",
        "projects": ["default"],
        "environment": "development",
        "expiresAt": None,
        "createdAt": token.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "seenAt": None,
        "secret": body["secret"],
    }
    assert body["secret"].startswith("default:development.")
    assert token.digest == ApiToken.digest_of(body["secret"])
    assert AuditEvent.objects.filter(type="api-token-created").count() == 1
    assert _sdk(body["secret"]).get("/api/client/features").status_code == 200


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"type": "client"}, "tokenName", id="no-name"),
        pytest.param({"tokenName": "t", "type": "admin"}, "type", id="admin"),
        pytest.param({"tokenName": "t", "type": "personal"}, "type", id="personal"),
        pytest.param({"tokenName": "t", "type": "client", "environment": "nope"}, "environment"),
        pytest.param({"tokenName": "t", "type": "client", "expiresAt": "bad"}, "expiresAt"),
        pytest.param(
            {"tokenName": "t", "type": "client", "expiresAt": "2001-01-01T00:00:00Z"},
            "expiresAt",
            id="past-expiry",
        ),
    ],
)
def test_create_project_api_token__invalid_body__400(admin_client, body, path):
    error = assert_error(
        admin_client.post(_project_url(), body, format="json"), 400, "ValidationError"
    )

    assert [d["path"] for d in error["details"]] == [f"/body/{path}"]
    assert not ApiToken.objects.filter(type=TokenType.CLIENT).exists()


def test_project_api_tokens__unknown_project__404(admin_client):
    assert_error(admin_client.get(_project_url("nope")), 404, "NotFoundError")
    response = admin_client.post(
        _project_url("nope"), {"tokenName": "t", "type": "client"}, format="json"
    )
    assert_error(response, 404, "NotFoundError")


def test_project_api_tokens__editor_may_read_create_and_delete(editor_client):
    created = editor_client.post(
        _project_url(), {"tokenName": "t", "type": "client"}, format="json"
    )

    assert created.status_code == 201
    assert editor_client.get(_project_url()).status_code == 200
    assert editor_client.delete(f"{_project_url()}/{created.json()['secret']}").status_code == 200


@pytest.mark.parametrize("role_id", [Role.OWNER, Role.MEMBER])
def test_project_api_tokens__project_role_may_create_in_its_project_only(db, role_id):
    user = UserFactory(root_role_id=Role.VIEWER)
    ProjectRoleAssignmentFactory(project_id="default", role_id=role_id, user=user)
    ProjectFactory(id="other")
    client = _sdk(make_token(TokenType.PERSONAL, user=user)[1])
    body = {"tokenName": "t", "type": "client"}

    assert client.post(_project_url(), body, format="json").status_code == 201
    assert_error(client.post(_project_url("other"), body, format="json"), 403, "NoAccessError")


def test_project_api_tokens__anonymous__401(anon_client, db):
    assert_error(anon_client.get(_project_url()), 401, "AuthenticationRequired")


@pytest.mark.parametrize("fixture", ["viewer_client", "client_token_client"])
def test_project_api_tokens__viewer_or_client_token__403(db, request, fixture):
    client = request.getfixturevalue(fixture)

    error = assert_error(client.get(_project_url()), 403, "NoAccessError")
    assert_error(
        client.post(_project_url(), {"tokenName": "t", "type": "client"}, format="json"),
        403,
        "NoAccessError",
    )
    assert error["permissions"] == ["READ_PROJECT_API_TOKEN"]


def test_create_project_api_token__text_plain__415(admin_client):
    response = admin_client.post(
        _project_url(), '{"tokenName": "t", "type": "client"}', content_type="text/plain"
    )

    assert_error(response, 415, "ContentTypeerror")


# --- DELETE /api/admin/projects/:projectId/api-tokens/:token -------------------------------


def test_delete_project_api_token__200_and_refused_from_next_request(admin_client):
    token, secret = make_token(TokenType.CLIENT, name="sdk", projects=["default"])

    response = admin_client.delete(f"{_project_url()}/{secret}")

    assert response.status_code == 200
    assert response.content == b""
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert AuditEvent.objects.get(type="api-token-deleted").pre_data["id"] == token.pk
    assert_error(_sdk(secret).get("/api/client/features"), 401, "AuthenticationRequired")


def test_delete_project_api_token__token_of_several_projects__400_kept(admin_client):
    ProjectFactory(id="other")
    token, secret = make_token(TokenType.CLIENT, projects=["default", "other"])

    response = admin_client.delete(f"{_project_url()}/{secret}")

    assert_error(response, 400, "ValidationError")
    assert ApiToken.objects.filter(pk=token.pk).exists()


@pytest.mark.parametrize(
    "kind",
    ["unknown", "other-project", "all-projects", "admin"],
)
def test_delete_project_api_token__not_this_projects__404_kept(admin_client, kind):
    ProjectFactory(id="other")
    secret = {
        "unknown": lambda: "default:development.unknown",
        "other-project": lambda: make_token(TokenType.CLIENT, projects=["other"])[1],
        "all-projects": lambda: make_token(TokenType.CLIENT, projects=["*"])[1],
        "admin": lambda: make_token(TokenType.ADMIN, name="ci")[1],
    }[kind]()
    count = ApiToken.objects.count()

    assert_error(admin_client.delete(f"{_project_url()}/{secret}"), 404, "NotFoundError")

    assert ApiToken.objects.count() == count


def test_delete_project_api_token__viewer__403_kept(viewer_client):
    token, secret = make_token(TokenType.CLIENT, projects=["default"])

    error = assert_error(viewer_client.delete(f"{_project_url()}/{secret}"), 403, "NoAccessError")

    assert error["permissions"] == ["DELETE_PROJECT_API_TOKEN"]
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_delete_project_api_token__anonymous__401(anon_client, db):
    assert_error(anon_client.delete(f"{_project_url()}/x"), 401, "AuthenticationRequired")
