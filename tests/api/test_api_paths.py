"""Paths under /api/ are matched as Unleash 8.2 matches them (measured): repeated slashes count
as one and a trailing slash is optional. Paths outside /api/ are left as they are."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from flagadmin.core.models import TokenType
from tests.conftest import assert_error
from tests.factories import make_token

PROJECTS = "/api/admin/projects"


def sdk() -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.CLIENT)[1])
    return client


@pytest.mark.parametrize(
    "path",
    [
        "/api/admin/projects/",
        "/api//admin/projects",
        "/api/admin//projects//",
    ],
)
def test_api_path__slashes_as_unleash__same_answer(admin_client, path):
    exact = admin_client.get(PROJECTS)

    response = admin_client.get(path)

    assert response.status_code == 200
    assert response.json() == exact.json()


def test_api_path__leading_double_slash__same_answer(admin_client):
    # A test client would read `//api/...` as a host; the server gets it as the path.
    response = admin_client.get(PROJECTS, PATH_INFO="//api/admin/projects")

    assert response.status_code == 200
    assert response.json() == admin_client.get(PROJECTS).json()


def test_api_path__post_with_trailing_slash__created(admin_client):
    response = admin_client.post(
        "/api/admin/projects/default/features/",
        json.dumps({"name": "slashed"}),
        content_type="application/json",
    )

    assert response.status_code == 201
    assert response["Location"] == "/api/admin/projects/default/features/slashed"


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        # An SDK whose base URL ends in `/` and which joins `/client/...` to it.
        ("get", "/api//client/features", None, 200),
        ("get", "/api/client/features/", None, 200),
        (
            "post",
            "/api/client/register/",
            {
                "appName": "shop",
                "instanceId": "i",
                "sdkVersion": "x:1",
                "strategies": [],
                "started": "2026-11-23T09:00:00Z",
                "interval": 15000,
            },
            202,
        ),
    ],
)
def test_api_path__client_api_slashes__served(db, method, path, body, status):
    client = sdk()
    if body is None:
        response = getattr(client, method)(path)
    else:
        response = getattr(client, method)(path, json.dumps(body), content_type="application/json")

    assert response.status_code == status, response.content


@pytest.mark.parametrize(
    "raw",
    [
        "/api/admin/projects/default/features/a%2F",
        "/api/admin/projects/default/features/a%2f",
        "/api/admin/projects/default%2F/features/a",
    ],
)
def test_api_path__encoded_slash__not_merged_into_another_resource(admin_client, raw):
    created = admin_client.post(
        "/api/admin/projects/default/features",
        json.dumps({"name": "a"}),
        content_type="application/json",
    )
    assert created.status_code == 201
    decoded = raw.replace("%2F", "/").replace("%2f", "/")

    # As gunicorn serves it: PATH_INFO decoded, RAW_URI as sent.
    read = admin_client.get(decoded, RAW_URI=raw)
    archived = admin_client.delete(decoded, RAW_URI=raw)

    assert_error(read, 404, "NotFoundError")
    assert_error(archived, 404, "NotFoundError")
    assert admin_client.get("/api/admin/projects/default/features/a").status_code == 200


def test_api_path__encoded_slash_in_the_query__slashes_still_merged(admin_client):
    response = admin_client.get(PROJECTS + "/", {"x": "a/b"}, RAW_URI=PROJECTS + "/?x=a%2Fb")

    assert response.status_code == 200


def test_api_path__trailing_slash_as_sent__served(admin_client):
    response = admin_client.get(PROJECTS + "/", RAW_URI=PROJECTS + "/")

    assert response.status_code == 200


def test_api_path__unknown_client_path__404_for_a_client_token(db):
    response = sdk().post("/api/client/nope", "x", content_type="text/plain")

    body = assert_error(response, 404, "NotFoundError")
    assert body["message"] == "The path you were looking for (/api/client/nope) is not available."


@pytest.mark.parametrize("path", ["/api/client", "/api/client/"])
def test_api_path__client_api_root__404_for_a_client_token(db, path):
    assert_error(sdk().get(path), 404, "NotFoundError")


def test_api_path__unknown_client_path__401_without_a_token(anon_client, db):
    assert_error(anon_client.get("/api/client/nope"), 401, "AuthenticationRequired")


def test_api_path__unknown_client_path__403_for_an_admin_token(admin_client):
    assert_error(admin_client.get("/api/client/nope"), 403, "NoAccessError")


def test_api_path__outside_api_untouched(admin_client, anon_client):
    # The Django admin's paths end in `/`; they stay exact.
    assert anon_client.get("/admin/login/").status_code == 200
    assert_error(anon_client.get("/health/"), 404, "NotFoundError")
