"""The error contract under /api/: every row of the table, in the contract's order of checks.

Exercised with /api/admin/api-tokens (GET, POST) and unknown paths."""

from __future__ import annotations

import io
import logging
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone
from rest_framework.test import APIClient

from flagadmin.api.errors import ContentTooLargeError
from flagadmin.api.parsers import StrictJSONParser
from flagadmin.api.views import ApiTokensView
from flagadmin.core.models import ApiToken, TokenType
from tests.conftest import assert_error
from tests.factories import UserFactory, make_token

URL = "/api/admin/api-tokens"
VALID_BODY = '{"tokenName": "t", "type": "admin"}'
AUTH_MESSAGE = (
    "You must authenticate to use this API. Send an API token in the `Authorization` header "
    "(the whole header value is the token; a leading `Bearer ` is accepted)."
)
BIG_BODY = '{"tokenName": "' + "x" * (100 * 1024) + '", "type": "admin"}'


def _with(header: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    return client


# --- 401 AuthenticationRequired --------------------------------------------------------------


def test_401__no_header(anon_client, db):
    response = anon_client.get(URL)

    body = assert_error(response, 401, "AuthenticationRequired")
    assert body["message"] == AUTH_MESSAGE
    assert set(body) == {"id", "name", "message"}
    assert response["WWW-Authenticate"] == 'ApiKey realm="api", header="Authorization"'


@pytest.mark.parametrize(
    "header",
    [
        pytest.param("*:*.0123456789abcdef", id="unknown-token"),
        pytest.param("", id="empty-header"),
        pytest.param("Bearer ", id="bearer-only"),
        pytest.param("user:nope", id="unknown-personal-token"),
    ],
)
def test_401__unknown_token(db, header):
    body = assert_error(_with(header).get(URL), 401, "AuthenticationRequired")

    assert body["message"] == AUTH_MESSAGE


def test_401__wrong_secret_same_answer_as_unknown(admin_token):
    wrong = admin_token[:-1] + ("0" if admin_token[-1] != "0" else "1")

    body = assert_error(_with(wrong).get(URL), 401, "AuthenticationRequired")

    assert body["message"] == AUTH_MESSAGE


def test_401__expired_token(db):
    _, secret = make_token(TokenType.ADMIN, expires_at=timezone.now() - timedelta(seconds=1))

    assert_error(_with(secret).get(URL), 401, "AuthenticationRequired")


def test_401__revoked_token(db):
    token, secret = make_token(TokenType.ADMIN)
    assert _with(secret).get(URL).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())

    assert_error(_with(secret).get(URL), 401, "AuthenticationRequired")


def test_401__deleted_token__refused_on_the_next_request(db):
    token, secret = make_token(TokenType.ADMIN)
    assert _with(secret).get(URL).status_code == 200
    token.delete()

    assert_error(_with(secret).get(URL), 401, "AuthenticationRequired")


def test_401__token_expiring_between_requests__refused_on_the_next_request(db):
    token, secret = make_token(TokenType.ADMIN, expires_at=timezone.now() + timedelta(hours=1))
    assert _with(secret).get(URL).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now())

    assert_error(_with(secret).get(URL), 401, "AuthenticationRequired")


def test_401__revoked_personal_token(db):
    token, secret = make_token(TokenType.PERSONAL, user=UserFactory(root_role_id=1))
    assert _with(secret).get(URL).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())

    assert_error(_with(secret).get(URL), 401, "AuthenticationRequired")


def test_401__personal_token_of_deactivated_user(db):
    user = UserFactory(root_role_id=1)
    _, secret = make_token(TokenType.PERSONAL, user=user)
    user.is_active = False
    user.save()

    assert_error(_with(secret).get(URL), 401, "AuthenticationRequired")


@pytest.mark.parametrize("param", ["token", "apiKey", "authorization", "Authorization"])
def test_401__token_in_query_string_is_ignored(admin_token, anon_client, param):
    response = anon_client.get(URL, {param: admin_token})

    assert_error(response, 401, "AuthenticationRequired")


def test_401__before_everything_else(anon_client, db):
    # Anonymous, wrong method, wrong content type, too big, malformed: still 401 first.
    assert_error(anon_client.delete(URL), 401, "AuthenticationRequired")
    assert_error(
        anon_client.post(URL, "{", content_type="text/plain"), 401, "AuthenticationRequired"
    )
    assert_error(
        anon_client.post(URL, BIG_BODY, content_type="application/json"),
        401,
        "AuthenticationRequired",
    )


# --- Bearer ----------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["Bearer ", "bearer ", "BEARER ", "Bearer   "])
def test_bearer_prefix_accepted(admin_token, prefix):
    assert _with(prefix + admin_token).get(URL).status_code == 200


def test_bearer_prefix_accepted_for_personal_token(db):
    _, secret = make_token(TokenType.PERSONAL, user=UserFactory(root_role_id=1))

    assert _with(f"Bearer {secret}").get(URL).status_code == 200


# --- 403 NoAccessError -----------------------------------------------------------------------


def test_403__client_token(client_token_client):
    body = assert_error(client_token_client.get(URL), 403, "NoAccessError")

    assert body["permissions"] == ["ADMIN"]
    assert "client token" in body["message"]


def test_403__viewer_personal_token__names_the_permission(viewer_client):
    body = assert_error(viewer_client.get(URL), 403, "NoAccessError")

    assert body["message"] == (
        "You don't have the required permissions to perform this operation. To perform this "
        'action, you need the "ADMIN" permission.'
    )
    assert body["permissions"] == ["ADMIN"]


def test_403__before_415_and_400(viewer_client):
    response = viewer_client.post(URL, "{", content_type="text/plain")

    assert_error(response, 403, "NoAccessError")


# --- 415 ContentTypeerror --------------------------------------------------------------------


def test_415__text_plain(admin_client):
    body = assert_error(
        admin_client.post(URL, VALID_BODY, content_type="text/plain"), 415, "ContentTypeerror"
    )

    assert body["message"] == (
        "We do not accept the content-type you provided (text/plain). Try using one of the "
        "content-types we do accept instead (application/json) and make sure the body is in "
        "the corresponding format."
    )
    assert not ApiToken.objects.filter(name="t").exists()


@pytest.mark.parametrize(
    "data", [pytest.param("", id="no-body"), pytest.param(VALID_BODY, id="with-body")]
)
def test_415__no_content_type(admin_client, data):
    response = admin_client.generic("POST", URL, data, content_type="")

    body = assert_error(response, 415, "ContentTypeerror")
    assert "(you didn't provide one)" in body["message"]


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "application/vnd.api+json", "application/jsonx"],
)
def test_415__other_types(admin_client, content_type):
    response = admin_client.post(URL, VALID_BODY, content_type=content_type)

    body = assert_error(response, 415, "ContentTypeerror")
    assert f"({content_type})" in body["message"]


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"],
)
def test_json_with_parameters_accepted(admin_client, content_type):
    response = admin_client.post(URL, VALID_BODY, content_type=content_type)

    assert response.status_code == 201, response.content


def test_415__before_400(admin_client):
    response = admin_client.post(URL, "{not json", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


# --- 400 ValidationError ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        pytest.param('{"tokenName": "t",', id="truncated"),
        pytest.param("{'tokenName': 't'}", id="single-quotes"),
        pytest.param('{"tokenName": NaN}', id="nan"),
        pytest.param(b"\xff\xfe{}", id="not-utf8"),
    ],
)
def test_400__malformed_json(admin_client, data):
    response = admin_client.post(URL, data, content_type="application/json")

    body = assert_error(response, 400, "ValidationError")
    assert body["message"].startswith("The request body is not valid JSON")
    assert body["details"][0]["path"] == "/body"


def test_400__nested_too_deeply_is_not_a_500(admin_client):
    response = admin_client.post(URL, "[" * 50_000, content_type="application/json")

    body = assert_error(response, 400, "ValidationError")
    assert body["message"] == "The request body is not valid JSON: the body is nested too deeply"


@pytest.mark.parametrize(
    ("data", "path"),
    [
        pytest.param('{"tokenName": "a\\u0000b", "type": "admin"}', "/body/tokenName", id="nul"),
        pytest.param(
            '{"tokenName": "\\ud800", "type": "admin"}', "/body/tokenName", id="surrogate"
        ),
        pytest.param(
            '{"tokenName": "t", "type": "admin", "x": [1, {"y": "\\udfff"}]}',
            "/body/x/1/y",
            id="nested",
        ),
        pytest.param(
            '{"tokenName": "t", "type": "admin", "a/b\\u0000": 1}', "/body/a~1b\x00", id="in-a-key"
        ),
    ],
)
def test_400__text_a_database_cannot_store(admin_client, data, path):
    # PostgreSQL refuses NUL, and an unpaired surrogate is not Unicode: both would be a 500.
    response = admin_client.post(URL, data, content_type="application/json")

    body = assert_error(response, 400, "ValidationError")
    message = (
        f"The `{path}` property must not contain the NUL character (\\u0000) or an unpaired "
        "surrogate escape (\\ud800-\\udfff)."
    )
    assert body["details"] == [{"path": path, "message": message}]
    assert not ApiToken.objects.filter(type="admin").exclude(name="admin-tok").exists()


def test_surrogate_pair_escape_is_fine(admin_client):
    response = admin_client.post(
        URL, '{"tokenName": "\\ud83d\\ude80", "type": "admin"}', content_type="application/json"
    )

    assert response.status_code == 201
    assert response.json()["tokenName"] == "\U0001f680"


def test_400__empty_body_with_json_type(admin_client):
    response = admin_client.generic("POST", URL, " ", content_type="application/json")

    body = assert_error(response, 400, "ValidationError")
    assert body["details"][0]["path"] == "/body"


def test_400__schema_error_names_the_property(admin_client):
    response = admin_client.post(URL, {"tokenName": "t", "type": True}, format="json")

    body = assert_error(response, 400, "ValidationError")
    message = (
        "The `/body/type` property must be equal to one of the allowed values: "
        '"admin", "client", "frontend". You sent true.'
    )
    assert body["message"] == message
    assert body["details"] == [{"path": "/body/type", "message": message}]


# --- 404 NotFoundError -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/admin/nope",
        "/api/admin/nope/",
        "/api/admin/api-tokens/1/nope",
        "/api/nope",
        "/api",
        "/api/",
    ],
)
def test_404__unknown_api_path(admin_client, path):
    body = assert_error(admin_client.get(path), 404, "NotFoundError")

    assert body["message"] == f"The path you were looking for ({path}) is not available."


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_404__unknown_api_path_any_method_no_content_type_check(admin_client, method):
    response = admin_client.generic(method, "/api/admin/nope", "x", content_type="text/plain")

    assert_error(response, 404, "NotFoundError")


@pytest.mark.parametrize("path", ["/api/admin/nope", "/api/nope"])
def test_404__unknown_api_path_anonymous__401_first(anon_client, db, path):
    assert_error(anon_client.get(path), 401, "AuthenticationRequired")


def test_404__unknown_api_path_client_token__403_first(client_token_client):
    assert_error(client_token_client.get("/api/admin/nope"), 403, "NoAccessError")


def test_404__outside_api_is_json_too(anon_client, db):
    body = assert_error(anon_client.get("/nope"), 404, "NotFoundError")

    assert body["message"] == "The path you were looking for (/nope) is not available."


# --- 405 MethodNotAllowedError ---------------------------------------------------------------


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_405__wrong_method(admin_client, method):
    response = getattr(admin_client, method)(URL, VALID_BODY, content_type="application/json")

    body = assert_error(response, 405, "MethodNotAllowedError")
    assert body["message"] == f"{method.upper()} is not allowed on this path."


def test_405__before_415(admin_client):
    response = admin_client.put(URL, "x", content_type="text/plain")

    assert_error(response, 405, "MethodNotAllowedError")


# --- 413 ContentTooLargeError ----------------------------------------------------------------


def test_413__body_over_100_kb(admin_client):
    response = admin_client.post(URL, BIG_BODY, content_type="application/json")

    body = assert_error(response, 413, "ContentTooLargeError")
    assert body["message"] == "The request body is larger than the limit of 100 kB."
    assert not ApiToken.objects.filter(name__startswith="xxx").exists()


def test_413__checked_before_415(admin_client):
    response = admin_client.post(URL, BIG_BODY, content_type="text/plain")

    assert_error(response, 413, "ContentTooLargeError")


def test_body_of_exactly_100_kb_is_read(admin_client):
    padding = 100 * 1024 - len('{"tokenName": "t", "type": "admin", "p": ""}')
    data = '{"tokenName": "t", "type": "admin", "p": "' + "x" * padding + '"}'
    assert len(data) == 100 * 1024

    assert admin_client.post(URL, data, content_type="application/json").status_code == 201


def test_413__parser_stops_at_the_limit_without_content_length():
    # A chunked body has no Content-Length: the parser itself reads at most limit + 1 bytes.
    stream = io.BytesIO(BIG_BODY.encode())

    with pytest.raises(ContentTooLargeError):
        StrictJSONParser().parse(stream)


# --- 500 InternalError -----------------------------------------------------------------------


def test_500__generic_message_nothing_leaked(admin_client, monkeypatch, caplog):
    def explode(self, request):
        raise RuntimeError("SELECT digest FROM flagadmin_apitoken WHERE password='hunter2'")

    monkeypatch.setattr(ApiTokensView, "get", explode)

    with caplog.at_level(logging.ERROR, logger="flagadmin.errors"):
        response = admin_client.get(URL)

    body = assert_error(response, 500, "InternalError")
    assert body == {
        "id": body["id"],
        "name": "InternalError",
        "message": "Something went wrong on our side. The error id has been logged.",
    }
    text = response.content.decode()
    for leak in ("SELECT", "hunter2", "RuntimeError", "Traceback", "flagadmin_apitoken"):
        assert leak not in text
    # The id in the body is the one in the log, so an operator can find the cause.
    assert any(body["id"] in record.getMessage() for record in caplog.records)


def test_500__in_a_write_rolls_back(admin_client, monkeypatch):
    from flagadmin.core import services

    real = services.issue_token

    def issue_then_fail(**kwargs):
        real(**kwargs)
        raise RuntimeError("boom")

    monkeypatch.setattr(services, "issue_token", issue_then_fail)

    response = admin_client.post(URL, VALID_BODY, content_type="application/json")

    assert_error(response, 500, "InternalError")
    assert not ApiToken.objects.filter(name="t").exists()


# --- 503 -------------------------------------------------------------------------------------


def test_503__sqlite_busy_is_not_a_500(admin_client, monkeypatch):
    def locked(self, request):
        raise OperationalError("database is locked")

    monkeypatch.setattr(ApiTokensView, "get", locked)

    body = assert_error(admin_client.get(URL), 503, "ServiceUnavailableError")
    assert "locked" not in body["message"]


# --- the session (browser users) -------------------------------------------------------------


def test_session__signed_in_user_can_call_the_api(db):
    client = APIClient()
    client.force_login(UserFactory(root_role_id=1))

    assert client.get(URL).status_code == 200


def test_session__write_without_csrf_token__403_says_so(db):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(UserFactory(root_role_id=1))

    response = client.post(URL, VALID_BODY, content_type="application/json")

    body = assert_error(response, 403, "NoAccessError")
    assert body["message"].startswith("CSRF Failed")
    assert body["permissions"] == []


def test_session__viewer__403(db):
    client = APIClient()
    client.force_login(UserFactory(root_role_id=3))

    assert assert_error(client.get(URL), 403, "NoAccessError")["permissions"] == ["ADMIN"]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/api/admin/x%0ay", id="newline-inside"),
        pytest.param("/api/admin/projects%0a", id="newline-after-known-path"),
    ],
)
def test_unknown_api_path_with_newline__anonymous__401_before_404(anon_client, db, path):
    assert_error(anon_client.get(path), 401, "AuthenticationRequired")


def test_validation_error__long_value__quoted_shortened(admin_client):
    response = admin_client.post(
        "/api/admin/projects/default/features", {"name": "x" * 5000}, format="json"
    )
    body = assert_error(response, 400, "ValidationError")
    assert len(body["message"]) < 1200
    assert body["details"][0]["message"].endswith("… (shortened).")


def test_client_token__operation_with_a_permission__403_names_it(client_token_client):
    response = client_token_client.put("/api/admin/groups/1", {"name": "g"}, format="json")
    body = assert_error(response, 403, "NoAccessError")
    assert body["message"].startswith(
        "You don't have the required permissions to perform this operation. To perform this "
        'action, you need the "ADMIN" permission. This token is a client token'
    )
    assert body["permissions"] == ["ADMIN"]


def test_client_token__operation_without_a_permission__403_names_none(client_token_client):
    body = assert_error(client_token_client.get("/api/admin/projects"), 403, "NoAccessError")
    assert body["message"].startswith(
        "You don't have the required permissions to perform this operation. This token is a "
        "client token"
    )
    assert body["permissions"] == []


def test_chunked_body_without_length__411(admin_client):
    response = admin_client.generic(
        "POST",
        "/api/admin/projects/default/features",
        b"",
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
    )
    body = assert_error(response, 411, "LengthRequiredError")
    assert "Content-Length" in body["message"]


@pytest.mark.parametrize("coding", ["gzip", "gzip, chunked", "deflate", "x-unknown"])
def test_body_in_an_unknown_transfer_coding__501_nothing_written(admin_client, coding):
    # gunicorn alone passes these on (nginx refuses them itself); Django would read {} or bytes.
    response = admin_client.generic(
        "POST",
        "/api/admin/projects",
        b'{"id": "coded", "name": "Coded"}',
        content_type="application/json",
        HTTP_TRANSFER_ENCODING=coding,
    )

    body = assert_error(response, 501, "ValidationError")
    assert body == {
        "id": body["id"],
        "name": "ValidationError",
        "message": "This Transfer-Encoding is not supported: send the body with Content-Length.",
    }
    assert admin_client.get("/api/admin/projects/coded").status_code == 404
