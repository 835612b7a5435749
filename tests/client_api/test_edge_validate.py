"""POST /edge/validate: which of the tokens sent are valid, with their type, projects and
environment, as Unleash 8.2 answers Unleash Edge (side by side with it: docs/scale-out.md)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from flagadmin.core.models import ApiToken, TokenType
from tests.conftest import assert_error
from tests.factories import UserFactory, make_token

VALIDATE = "/edge/validate"
# The headers Edge's HTTP client sends on every upstream request (no token on this one).
EDGE_HEADERS = {
    "HTTP_USER_AGENT": "unleash-edge-19.10.0",
    "HTTP_UNLEASH_APPNAME": "unleash-edge",
    "HTTP_UNLEASH_INSTANCEID": "edge-pod-1",
    "HTTP_UNLEASH_CONNECTION_ID": "7a1c0f0e-1d2b-4c3d-9e8f-0a1b2c3d4e5f",
    "HTTP_UNLEASH_CLIENT_SPEC": "5.2.2",
}


def validate(body, client: APIClient | None = None, **headers):
    client = client or APIClient()
    return client.post(
        VALIDATE, json.dumps(body), content_type="application/json", **EDGE_HEADERS, **headers
    )


@pytest.fixture
def development_token(db) -> str:
    return make_token(TokenType.CLIENT, projects=["default"], environment="development")[1]


def test_validate__valid_tokens_in_order_sent_others_left_out(db, django_assert_num_queries):
    client_secret = make_token(TokenType.CLIENT, projects=["default"], environment="production")[1]
    every_project = make_token(TokenType.CLIENT, environment="development")[1]
    two_projects = make_token(
        TokenType.CLIENT, projects=["default", "web"], environment="development"
    )[1]
    admin = make_token(TokenType.ADMIN)[1]
    frontend = make_token(TokenType.FRONTEND, projects=["web"], environment="production")[1]
    unknown = "default:development.0123456789abcdef"
    sent = [two_projects, unknown, client_secret, "", every_project, admin, frontend, client_secret]

    with django_assert_num_queries(1):
        response = validate({"tokens": sent})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "tokens": [
            {
                "token": two_projects,
                "type": "client",
                "projects": ["default", "web"],
                "environment": "development",
            },
            {
                "token": client_secret,
                "type": "client",
                "projects": ["default"],
                "environment": "production",
            },
            {
                "token": every_project,
                "type": "client",
                "projects": ["*"],
                "environment": "development",
            },
            {"token": admin, "type": "admin", "projects": ["*"], "environment": "*"},
            {
                "token": frontend,
                "type": "frontend",
                "projects": ["web"],
                "environment": "production",
            },
            {
                "token": client_secret,
                "type": "client",
                "projects": ["default"],
                "environment": "production",
            },
        ]
    }


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"revoked_at": timezone.now()}, id="revoked"),
        pytest.param({"expires_at": timezone.now() - timedelta(seconds=1)}, id="expired"),
    ],
)
def test_validate__revoked_or_expired__left_out(development_token, change):
    ApiToken.objects.update(**change)

    response = validate({"tokens": [development_token]})

    assert (response.status_code, response.json()) == (200, {"tokens": []})


def test_validate__personal_token__left_out(db):
    # Unleash looks up API tokens only; Edge could not read a `personal` type either.
    secret = make_token(TokenType.PERSONAL, user=UserFactory())[1]

    response = validate({"tokens": [secret]})

    assert response.json() == {"tokens": []}


def test_validate__empty_list__200_empty(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = validate({"tokens": []})

    assert (response.status_code, response.json()) == (200, {"tokens": []})


@pytest.mark.parametrize(
    "token_type", [TokenType.ADMIN, "bogus", "personal"], ids=["admin", "unknown", "personal"]
)
def test_validate__other_credentials__ignored(development_token, token_type):
    if token_type == "bogus":
        header = "default:development.not-a-token"
    elif token_type == "personal":
        header = make_token(TokenType.PERSONAL, user=UserFactory())[1]
    else:
        header = make_token(token_type)[1]

    response = validate({"tokens": [development_token]}, HTTP_AUTHORIZATION=header)

    assert response.status_code == 200
    assert [t["token"] for t in response.json()["tokens"]] == [development_token]


@pytest.mark.parametrize("token_type", [TokenType.CLIENT, TokenType.FRONTEND])
def test_validate__sdk_token_in_authorization__403(development_token, token_type):
    header = make_token(token_type, projects=["default"], environment="development")[1]

    response = validate({"tokens": [development_token]}, HTTP_AUTHORIZATION=header)

    error = assert_error(response, 403, "NoAccessError")
    assert error["message"] == "invalid token: expected a different token type for this endpoint"


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        pytest.param(
            {},
            "/body/tokens",
            "The `/body/tokens` property is required. It was not present on the data you sent.",
            id="missing",
        ),
        pytest.param(
            {"tokens": "x"},
            "/body/tokens",
            'The `/body/tokens` property must be array. You sent "x".',
            id="not-a-list",
        ),
        pytest.param(
            {"tokens": ["a", 1]},
            "/body/tokens/1",
            "The `/body/tokens/1` property must be string. You sent 1.",
            id="not-a-string",
        ),
        pytest.param(
            [], "/body", "The `/body` property must be object. You sent [].", id="not-an-object"
        ),
    ],
)
def test_validate__invalid_body__400(db, body, path, message):
    error = assert_error(validate(body), 400, "ValidationError")

    assert error["details"] == [{"path": path, "message": message}]


def test_validate__not_json__415(db):
    response = APIClient().post(VALIDATE, "tokens", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


def test_validate__get__405(db):
    assert_error(APIClient().get(VALIDATE), 405, "MethodNotAllowedError")
