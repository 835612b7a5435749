"""client_api.middleware: SDK polls answered from the worker's memory (a token looked up
lately, a current body) exactly as the view answers them; everything else reaches the view."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from client_api.views import ClientFeaturesView
from flagadmin.core.models import TokenType
from tests.conftest import assert_error
from tests.factories import make_token

CLIENT_FEATURES = "/api/client/features"

pytestmark = pytest.mark.usefixtures("reused_lookups")


@pytest.fixture
def reused_lookups():
    with override_settings(CLIENT_API_REUSE_SECONDS=60):
        yield


@pytest.fixture
def sdk(admin_client) -> APIClient:
    body = {"name": "checkout"}
    response = admin_client.post(
        "/api/admin/projects/default/features", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 201
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.CLIENT, projects=["*"])[1])
    return client


def view_not_reached(monkeypatch) -> None:
    monkeypatch.setattr(ClientFeaturesView, "dispatch", None)  # a 500 if it is


def headers(response) -> dict[str, str]:
    return dict(response.items())


def test_full_answer__as_the_view_gives_it(sdk, django_assert_num_queries, monkeypatch):
    by_view = sdk.get(CLIENT_FEATURES)
    view_not_reached(monkeypatch)

    with django_assert_num_queries(0):
        from_memory = sdk.get(CLIENT_FEATURES)

    assert from_memory.status_code == by_view.status_code == 200
    assert from_memory.content == by_view.content
    assert headers(from_memory) == headers(by_view)


@pytest.mark.parametrize("if_none_match", ["{etag}", "W/{etag}", '"other", {etag}', "*"])
def test_not_modified__as_the_view_gives_it(
    sdk, django_assert_num_queries, monkeypatch, if_none_match
):
    etag = sdk.get(CLIENT_FEATURES)["ETag"]
    sent = if_none_match.format(etag=etag)
    with override_settings(CLIENT_API_REUSE_SECONDS=0):  # the view, looking the token up
        by_view = sdk.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=sent)
    sdk.get(CLIENT_FEATURES)  # remembered again
    view_not_reached(monkeypatch)

    with django_assert_num_queries(0):
        from_memory = sdk.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=sent)

    assert from_memory.status_code == by_view.status_code == 304
    assert from_memory.content == b""
    assert headers(from_memory) == headers(by_view)


@pytest.mark.parametrize("path", ["/api//client/features", "/api/client/features/"])
def test_paths_matched_as_unleash__from_memory(path, sdk, monkeypatch):
    etag = sdk.get(CLIENT_FEATURES)["ETag"]
    view_not_reached(monkeypatch)

    assert sdk.get(path, HTTP_IF_NONE_MATCH=etag).status_code == 304


def test_another_etag__the_view_revalidates(sdk, django_assert_num_queries):
    full = sdk.get(CLIENT_FEATURES)

    with django_assert_num_queries(1):  # the revision, read now
        response = sdk.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH='"older"')

    assert response.status_code == 200
    assert response.content == full.content


def test_query_refused__the_views_400(sdk):
    sdk.get(CLIENT_FEATURES)

    body = assert_error(sdk.get(CLIENT_FEATURES + "?tag=red"), 400, "ValidationError")

    assert body["details"][0]["path"] == "/query/tag/0"


@pytest.mark.parametrize(
    ("token", "status", "name"),
    [
        pytest.param("*:development.unknown", 401, "AuthenticationRequired", id="unknown"),
        pytest.param("", 401, "AuthenticationRequired", id="empty"),
    ],
)
def test_token_not_remembered__the_views_error(sdk, token, status, name):
    sdk.get(CLIENT_FEATURES)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=token)

    assert_error(client.get(CLIENT_FEATURES), status, name)


def test_admin_token__the_views_403(admin_client, sdk):
    sdk.get(CLIENT_FEATURES)

    assert_error(admin_client.get(CLIENT_FEATURES), 403, "NoAccessError")


def test_other_method__the_views_405(sdk):
    sdk.get(CLIENT_FEATURES)

    response = sdk.post(CLIENT_FEATURES, "{}", content_type="application/json")

    assert_error(response, 405, "MethodNotAllowedError")


def test_head__answered_by_the_view(sdk):
    sdk.get(CLIENT_FEATURES)

    assert sdk.head(CLIENT_FEATURES).status_code == 200
