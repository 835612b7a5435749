"""GET /api/client/features in its two shapes, chosen as Unleash 8.2 chooses them (its
ClientSpecService): segments' constraints inlined into the strategies by default, or, for SDKs
whose `Unleash-Client-Spec` header is 4.2.0 or later, strategies naming their segments by id and
the segments in use listed once at the top level. Each shape has its own body and ETag, from the
view and from the worker's memory alike. Bodies measured on the reference."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from client_api import selectors
from client_api.views import ClientFeaturesView
from flagadmin.core.caches import named
from flagadmin.core.models import TokenType
from tests.conftest import assert_error
from tests.factories import make_token

SEGMENTS = "/api/admin/segments"
FEATURES = "/api/admin/projects/default/features"
CLIENT_FEATURES = "/api/client/features"
IN_WEB = {"contextName": "appName", "operator": "IN", "values": ["web"]}
USER_7 = {"contextName": "userId", "operator": "IN", "values": ["7"]}
OWN = {"contextName": "environment", "operator": "IN", "values": ["x"]}


def stored(constraint: dict) -> dict:
    return constraint | {"caseInsensitive": False, "inverted": False}


def send(client: APIClient, method: str, url: str, body=None):
    if body is None:
        return getattr(client, method)(url, content_type="application/json")
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


def segment(client: APIClient, name: str, constraints: list[dict]) -> int:
    response = send(client, "post", SEGMENTS, {"name": name, "constraints": constraints})
    assert response.status_code == 201, response.content
    return response.json()["id"]


def add_strategy(client, flag: str, body: dict, env: str = "development") -> None:
    url = f"{FEATURES}/{flag}/environments/{env}/strategies"
    assert send(client, "post", url, body).status_code == 200


@pytest.fixture
def sdk(db) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.CLIENT, projects=["default"])[1])
    return client


@pytest.fixture
def setup(admin_client) -> dict:
    """Flag `checkout` with a strategy using two segments (and its own constraint) and one
    without; an unused segment; a segment used only in production, one only by an archived
    flag's strategy."""
    user_7 = segment(admin_client, "z-users", [USER_7])
    web = segment(admin_client, "a-web", [IN_WEB])
    segment(admin_client, "unused", [IN_WEB])
    elsewhere = segment(admin_client, "m-production", [USER_7])
    archived = segment(admin_client, "B-archived", [IN_WEB])
    assert send(admin_client, "post", FEATURES, {"name": "checkout"}).status_code == 201
    add_strategy(
        admin_client,
        "checkout",
        {"name": "default", "constraints": [OWN], "segments": [user_7, web]},
    )
    add_strategy(
        admin_client, "checkout", {"name": "flexibleRollout", "parameters": {"rollout": "50"}}
    )
    add_strategy(
        admin_client, "checkout", {"name": "default", "segments": [elsewhere]}, "production"
    )
    assert send(admin_client, "post", FEATURES, {"name": "gone"}).status_code == 201
    add_strategy(admin_client, "gone", {"name": "default", "segments": [archived]})
    assert send(admin_client, "delete", f"{FEATURES}/gone").status_code == 202
    return {"users": user_7, "web": web, "production": elsewhere, "archived": archived}


ROLLOUT = {
    "name": "flexibleRollout",
    "constraints": [],
    "parameters": {"groupId": "checkout", "rollout": "50", "stickiness": "default"},
    "variants": [],
}


def flag_with(strategies: list[dict]) -> dict:
    return {
        "name": "checkout",
        "type": "release",
        "enabled": False,
        "project": "default",
        "stale": False,
        "strategies": strategies,
        "variants": [],
        "description": None,
        "impressionData": False,
    }


def meta(response) -> dict:
    body = response.json()["meta"]
    assert body["etag"] == response["ETag"]
    return body


@pytest.mark.parametrize("spec", [None, "", "4.1.9", "4.2.0-beta.1", "3.0.0"])
def test_inlined__no_header_or_before_4_2(sdk, setup, spec):
    headers = {} if spec is None else {"HTTP_UNLEASH_CLIENT_SPEC": spec}

    response = sdk.get(CLIENT_FEATURES, **headers)

    assert response.status_code == 200
    assert response.json() == {
        "version": 2,
        "features": [
            flag_with(
                [
                    {
                        "name": "default",
                        "constraints": [stored(OWN), stored(USER_7), stored(IN_WEB)],
                        "parameters": {},
                        "variants": [],
                    },
                    ROLLOUT,
                ]
            )
        ],
        "query": {
            "project": ["default"],
            "environment": "development",
            "inlineSegmentConstraints": True,
        },
        "meta": meta(response),
    }


@pytest.mark.parametrize("spec", ["4.2.0", "4.2.1", "5.2.2", "6.1.0", "4.2.0+build.5", " 5.0.0 "])
def test_segments_at_top_level__4_2_or_later(sdk, setup, spec):
    response = sdk.get(CLIENT_FEATURES, HTTP_UNLEASH_CLIENT_SPEC=spec)

    body = response.json()
    assert response.status_code == 200
    # Every segment a strategy uses, of any flag (archived ones too) and environment, by name
    # (code points), as Unleash lists them; an unused one is left out.
    assert body == {
        "version": 2,
        "features": [
            flag_with(
                [
                    {
                        "name": "default",
                        "constraints": [stored(OWN)],
                        "parameters": {},
                        "variants": [],
                        "segments": sorted([setup["users"], setup["web"]]),
                    },
                    ROLLOUT,
                ]
            )
        ],
        "query": {
            "project": ["default"],
            "environment": "development",
            "inlineSegmentConstraints": False,
        },
        "segments": [
            {"id": setup["archived"], "name": "B-archived", "constraints": [stored(IN_WEB)]},
            {"id": setup["web"], "name": "a-web", "constraints": [stored(IN_WEB)]},
            {"id": setup["production"], "name": "m-production", "constraints": [stored(USER_7)]},
            {"id": setup["users"], "name": "z-users", "constraints": [stored(USER_7)]},
        ],
        "meta": meta(response),
    }
    assert list(body) == ["version", "features", "query", "segments", "meta"]


def test_segments_at_top_level__none_in_use__empty_list(admin_client, sdk):
    send(admin_client, "post", FEATURES, {"name": "plain"})

    body = sdk.get(CLIENT_FEATURES, HTTP_UNLEASH_CLIENT_SPEC="5.0.0").json()

    assert (body["segments"], body["query"]["inlineSegmentConstraints"]) == ([], False)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            "v4.2.0", 'Invalid prefix in the Unleash-Client-Spec header: "v4.2.0".', id="v"
        ),
        pytest.param(
            "latest", 'Invalid prefix in the Unleash-Client-Spec header: "latest".', id="word"
        ),
        pytest.param(
            "4.2", 'Invalid SemVer in the Unleash-Client-Spec header: "4.2".', id="two-parts"
        ),
        pytest.param(
            "04.2.0", 'Invalid SemVer in the Unleash-Client-Spec header: "04.2.0".', id="zero"
        ),
        pytest.param(
            "9007199254740992.0.0",
            'Invalid SemVer in the Unleash-Client-Spec header: "9007199254740992.0.0".',
            id="unsafe-integer",
        ),
    ],
)
@override_settings(CLIENT_API_REUSE_SECONDS=60)
def test_invalid_spec__400_as_unleash(sdk, setup, spec, message):
    sdk.get(CLIENT_FEATURES)  # a body kept: the middleware leaves the refusal to the view

    for url in (CLIENT_FEATURES, f"{CLIENT_FEATURES}/checkout"):
        body = assert_error(sdk.get(url, HTTP_UNLEASH_CLIENT_SPEC=spec), 400, "ValidationError")

        assert (body["message"], body["details"]) == (message, [{"message": message}])


def test_shapes__own_etags_never_shared(sdk, setup):
    inlined = sdk.get(CLIENT_FEATURES)
    listed = sdk.get(CLIENT_FEATURES, HTTP_UNLEASH_CLIENT_SPEC="5.0.0")

    assert inlined["ETag"] != listed["ETag"]
    assert meta(inlined)["queryHash"] != meta(listed)["queryHash"]
    # Each shape's ETag is 304 for that shape only.
    assert sdk.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=inlined["ETag"]).status_code == 304
    other = sdk.get(
        CLIENT_FEATURES, HTTP_IF_NONE_MATCH=inlined["ETag"], HTTP_UNLEASH_CLIENT_SPEC="5.0.0"
    )
    assert (other.status_code, other["ETag"]) == (200, listed["ETag"])
    assert other.json()["query"]["inlineSegmentConstraints"] is False
    again = sdk.get(
        CLIENT_FEATURES, HTTP_IF_NONE_MATCH=listed["ETag"], HTTP_UNLEASH_CLIENT_SPEC="5.0.0"
    )
    assert again.status_code == 304
    back = sdk.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=listed["ETag"])
    assert (back.status_code, back["ETag"]) == (200, inlined["ETag"])


@override_settings(CLIENT_API_REUSE_SECONDS=60)
def test_shapes__kept_apart_in_memory(sdk, setup, django_assert_num_queries, monkeypatch):
    inlined = sdk.get(CLIENT_FEATURES)
    listed = sdk.get(CLIENT_FEATURES, HTTP_UNLEASH_CLIENT_SPEC="5.0.0")
    monkeypatch.setattr(ClientFeaturesView, "dispatch", None)  # a 500 if it is reached

    # Both kept, and answered from memory (client_api.middleware, no query) in their shapes.
    with django_assert_num_queries(0):
        from_memory_inlined = sdk.get(CLIENT_FEATURES)
        from_memory_listed = sdk.get(CLIENT_FEATURES, HTTP_UNLEASH_CLIENT_SPEC="5.0.0")

    assert len(named("client payload bodies")) == 2
    assert from_memory_inlined.content == inlined.content
    assert from_memory_listed.content == listed.content


def test_segment_changed__both_shapes_move(admin_client, sdk, setup):
    inlined = sdk.get(CLIENT_FEATURES)
    listed = sdk.get(CLIENT_FEATURES, HTTP_UNLEASH_CLIENT_SPEC="5.0.0")
    changed = {"name": "a-web", "constraints": [USER_7]}
    assert send(admin_client, "put", f"{SEGMENTS}/{setup['web']}", changed).status_code == 204

    inlined_after = sdk.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=inlined["ETag"])
    listed_after = sdk.get(
        CLIENT_FEATURES, HTTP_IF_NONE_MATCH=listed["ETag"], HTTP_UNLEASH_CLIENT_SPEC="5.0.0"
    )

    assert (inlined_after.status_code, listed_after.status_code) == (200, 200)
    web = next(s for s in listed_after.json()["segments"] if s["id"] == setup["web"])
    assert web["constraints"] == [stored(USER_7)]
    default = inlined_after.json()["features"][0]["strategies"][0]
    assert default["constraints"] == [stored(OWN), stored(USER_7), stored(USER_7)]


def test_one_flag__strategies_name_segments_by_id(sdk, setup):
    listed = sdk.get(f"{CLIENT_FEATURES}/checkout", HTTP_UNLEASH_CLIENT_SPEC="4.2.0")
    inlined = sdk.get(f"{CLIENT_FEATURES}/checkout")

    # As Unleash: the flag alone, its strategies in the shape the header asks for.
    assert listed.json()["strategies"][0] == {
        "name": "default",
        "constraints": [stored(OWN)],
        "parameters": {},
        "variants": [],
        "segments": sorted([setup["users"], setup["web"]]),
    }
    assert "segments" not in listed.json()
    assert inlined.json()["strategies"][0]["constraints"] == [
        stored(OWN),
        stored(USER_7),
        stored(IN_WEB),
    ]


def test_queries__fixed_whatever_the_segments(
    admin_client, sdk, setup, django_assert_max_num_queries
):
    for number in range(10):
        segment_id = segment(admin_client, f"more-{number}", [IN_WEB])
        add_strategy(admin_client, "checkout", {"name": "default", "segments": [segment_id]})
    selectors.clear_cache()

    # The token's lookup and the body's build (flags, environments, strategies, links,
    # segments, dependencies, the revision), as with the 4 segments of `setup`.
    with django_assert_max_num_queries(9):
        response = sdk.get(CLIENT_FEATURES, HTTP_UNLEASH_CLIENT_SPEC="5.0.0")

    assert len(response.json()["segments"]) == 14
