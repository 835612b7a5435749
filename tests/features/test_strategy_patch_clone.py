"""PATCH of a strategy (Unleash's `patchFeatureStrategy`) and cloning a flag (`cloneFeature`),
each answered as Unleash 8.2 answers them (checked against the reference server)."""

from __future__ import annotations

import json

import pytest

from features.models import FeatureEnvironment
from flagadmin.core.models import AuditEvent
from tests.conftest import assert_error

FEATURES = "/api/admin/projects/default/features"
FLAG = f"{FEATURES}/checkout"
ENVIRONMENT = f"{FLAG}/environments/development"
STRATEGIES = f"{ENVIRONMENT}/strategies"


def post(client, url: str, body=None):
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def patch(client, url: str, body):
    return client.patch(url, json.dumps(body), content_type="application/json")


def _last_event_id() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def _events(since: int) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(id__gt=since).order_by("id"))


@pytest.fixture
def strategy(admin_client) -> dict:
    assert post(admin_client, FEATURES, {"name": "checkout"}).status_code == 201
    body = {
        "name": "flexibleRollout",
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "checkout"},
        "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1"]}],
    }
    created = post(admin_client, STRATEGIES, body)
    assert created.status_code == 200
    return created.json()


# --- PATCH a strategy ------------------------------------------------------------------------


def test_patch_strategy__nested_paths__stored_answered_and_recorded(admin_client, strategy):
    before = _last_event_id()
    operations = [
        {"op": "replace", "path": "/parameters/rollout", "value": "30"},
        {"op": "add", "path": "/constraints/0/values/-", "value": "2"},
        {"op": "add", "path": "/title", "value": "Half"},
        {"op": "replace", "path": "/sortOrder", "value": 7},
    ]

    response = patch(admin_client, f"{STRATEGIES}/{strategy['id']}", operations)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["parameters"] == {"rollout": "30", "stickiness": "default", "groupId": "checkout"}
    assert body["constraints"][0]["values"] == ["1", "2"]
    assert body["title"] == "Half"
    # As Unleash's store: the sort order does not move through a patch.
    assert body["sortOrder"] == 0
    assert admin_client.get(f"{STRATEGIES}/{strategy['id']}").json() == body
    (event,) = _events(before)
    assert event.type == "feature-strategy-update"
    assert event.data["parameters"]["rollout"] == "30"
    assert event.pre_data["parameters"]["rollout"] == "50"
    assert event.pre_data["title"] is None


def test_patch_strategy__pause_last_enabled__environment_turned_off(admin_client, strategy):
    post(admin_client, f"{ENVIRONMENT}/on")
    before = _last_event_id()

    response = patch(
        admin_client,
        f"{STRATEGIES}/{strategy['id']}",
        [{"op": "replace", "path": "/disabled", "value": True}],
    )

    assert response.status_code == 200
    assert response.json()["disabled"] is True
    entry = FeatureEnvironment.objects.get(feature_id="checkout", environment_id="development")
    assert entry.enabled is False
    assert [e.type for e in _events(before)] == [
        "feature-strategy-update",
        "feature-environment-disabled",
    ]


def test_patch_strategy__removed_title_and_segments__stay(admin_client, strategy):
    patch(
        admin_client,
        f"{STRATEGIES}/{strategy['id']}",
        [{"op": "add", "path": "/title", "value": "T"}],
    )

    response = patch(
        admin_client,
        f"{STRATEGIES}/{strategy['id']}",
        [{"op": "remove", "path": "/title"}, {"op": "remove", "path": "/segments"}],
    )

    assert response.status_code == 200
    assert response.json()["title"] == "T"


@pytest.mark.parametrize(
    "operations",
    [
        pytest.param([{"op": "test", "path": "/name", "value": "default"}], id="failed-test"),
        pytest.param([{"op": "remove", "path": "/parameters/nope"}], id="missing-member"),
        pytest.param([{"op": "replace", "path": "/constraints/5", "value": {}}], id="bad-index"),
        pytest.param([{"op": "replace", "path": "/name", "value": "nope"}], id="unknown-name"),
        pytest.param(
            [{"op": "replace", "path": "/parameters/rollout", "value": "101"}], id="rollout"
        ),
        pytest.param([{"op": "jump", "path": "/name"}], id="unknown-op"),
    ],
)
def test_patch_strategy__refused__400_nothing_changed(admin_client, strategy, operations):
    before = _last_event_id()

    response = patch(admin_client, f"{STRATEGIES}/{strategy['id']}", operations)

    assert_error(response, 400, "ValidationError")
    assert admin_client.get(f"{STRATEGIES}/{strategy['id']}").json() == strategy
    assert _events(before) == []


def test_patch_strategy__unknown_strategy__404(admin_client, strategy):
    response = patch(
        admin_client,
        f"{STRATEGIES}/00000000-0000-0000-0000-000000000000",
        [{"op": "replace", "path": "/title", "value": "x"}],
    )

    assert_error(response, 404, "NotFoundError")


def test_patch_strategy__viewer__403(viewer_client, admin_client, strategy):
    response = patch(
        viewer_client,
        f"{STRATEGIES}/{strategy['id']}",
        [{"op": "add", "path": "/title", "value": "x"}],
    )

    assert response.status_code == 403


def test_patch_strategy__anonymous__401(anon_client, strategy):
    response = patch(
        anon_client,
        f"{STRATEGIES}/{strategy['id']}",
        [{"op": "add", "path": "/title", "value": "x"}],
    )

    assert response.status_code == 401


def test_patch_strategy__wrong_content_type__415(admin_client, strategy):
    response = admin_client.patch(
        f"{STRATEGIES}/{strategy['id']}", "title=x", content_type="text/plain"
    )

    assert response.status_code == 415


# --- clone a flag ----------------------------------------------------------------------------

ENV_VARIANTS = [{"name": "v1", "weight": 1000, "weightType": "variable", "stickiness": "default"}]


@pytest.fixture
def source(admin_client) -> str:
    """Flag `checkout`: described, typed, tagged, on in development with a rollout (groupId
    `checkout`), a paused strategy in production, environment variants and a parent."""
    assert post(admin_client, FEATURES, {"name": "parent"}).status_code == 201
    created = post(
        admin_client,
        FEATURES,
        {
            "name": "checkout",
            "description": "Pay",
            "type": "experiment",
            "impressionData": True,
            "tags": [{"type": "simple", "value": "shop"}],
        },
    )
    assert created.status_code == 201, created.content
    rollout = {
        "name": "flexibleRollout",
        "title": "Half",
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "checkout"},
    }
    assert post(admin_client, STRATEGIES, rollout).status_code == 200
    production = f"{FLAG}/environments/production/strategies"
    assert post(admin_client, production, {"name": "default", "disabled": True}).status_code == 200
    assert post(admin_client, f"{ENVIRONMENT}/on").status_code == 200
    FeatureEnvironment.objects.filter(feature_id="checkout", environment_id="development").update(
        variants=ENV_VARIANTS
    )
    dependency = post(admin_client, f"{FLAG}/dependencies", {"feature": "parent", "enabled": False})
    assert dependency.status_code == 200, dependency.content
    return "checkout"


def _strategies_of(body: dict) -> dict[str, list[tuple]]:
    return {
        env["name"]: [
            (s["name"], s["title"], s["disabled"], s["sortOrder"], s["parameters"])
            for s in env["strategies"]
        ]
        for env in body["environments"]
    }


def test_clone__copies_as_unleash__201_events(admin_client, source):
    before = _last_event_id()

    response = post(admin_client, f"{FLAG}/clone", {"name": "checkout-copy"})

    assert response.status_code == 201, response.content
    assert response["Location"] == f"{FEATURES}/checkout-copy"
    body = response.json()
    assert admin_client.get(f"{FEATURES}/checkout-copy").json() == body
    assert (body["name"], body["description"], body["type"], body["impressionData"]) == (
        "checkout-copy",
        "Pay",
        "experiment",
        True,
    )
    assert body["tags"] == []
    assert {env["name"]: env["enabled"] for env in body["environments"]} == {
        "development": False,
        "production": False,
    }
    rollout = {"rollout": "50", "stickiness": "default", "groupId": "checkout-copy"}
    assert _strategies_of(body) == {
        "development": [("flexibleRollout", "Half", False, 0, rollout)],
        "production": [("default", None, True, 0, {})],
    }
    assert body["dependencies"] == [{"feature": "parent", "enabled": False, "variants": []}]
    copied = FeatureEnvironment.objects.get(
        feature_id="checkout-copy", environment_id="development"
    )
    assert copied.variants == ENV_VARIANTS
    events = _events(before)
    assert [(e.type, e.environment, e.feature_name) for e in events] == [
        ("feature-created", None, "checkout-copy"),
        ("feature-dependency-added", None, "checkout-copy"),
        ("feature-strategy-add", "development", "checkout-copy"),
        ("feature-strategy-add", "production", "checkout-copy"),
    ]
    assert events[1].data == {"feature": "parent", "enabled": False, "variants": []}


def test_clone__replace_group_id_false__group_id_kept(admin_client, source):
    response = post(admin_client, f"{FLAG}/clone", {"name": "copy", "replaceGroupId": False})

    assert response.status_code == 201
    development = _strategies_of(response.json())["development"]
    assert development[0][4]["groupId"] == "checkout"


ADMIN_TOKEN_USER = {"id": -42, "name": "Unleash Admin Token User", "imageUrl": ""}


def _clone_environment(name: str, env_type: str, sort_order: int) -> dict:
    return {
        "name": name,
        "featureName": "old-copy",
        "environment": name,
        "type": env_type,
        "enabled": False,
        "sortOrder": sort_order,
        "variantCount": 0,
        "strategies": [],
        "variants": [],
        "lastSeenAt": None,
        "hasStrategies": False,
        "hasEnabledStrategies": False,
    }


@pytest.mark.parametrize("stale", [True, False], ids=["stale", "not-stale"])
def test_clone__stale_state__copied_in_body_event_and_client_payload(
    admin_client, client_token_client, stale
):
    # Unleash 8.2 (checked on the reference): a stale source gives a stale copy, recorded in
    # the copy's `feature-created` (stale: true) and in no `feature-stale-on`.
    source = {"name": "old", "type": "kill-switch", "description": "Old", "impressionData": True}
    assert post(admin_client, FEATURES, source).status_code == 201
    marked = post(
        admin_client, "/api/admin/projects/default/stale", {"features": ["old"], "stale": stale}
    )
    assert marked.status_code == 202
    before = _last_event_id()

    response = post(admin_client, f"{FEATURES}/old/clone", {"name": "old-copy"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body == {
        "name": "old-copy",
        "type": "kill-switch",
        "description": "Old",
        "project": "default",
        "enabled": False,
        "stale": stale,
        "favorite": False,
        "impressionData": True,
        "archived": False,
        "archivedAt": None,
        "createdAt": body["createdAt"],
        "createdBy": ADMIN_TOKEN_USER,
        "lastSeenAt": None,
        "environments": [
            _clone_environment("development", "development", 100),
            _clone_environment("production", "production", 200),
        ],
        "variants": [],
        "tags": [],
        "children": [],
        "lifecycle": {"stage": "initial", "enteredStageAt": body["createdAt"]},
        "dependencies": [],
        "collaborators": {"users": [ADMIN_TOKEN_USER]},
    }
    assert admin_client.get(f"{FEATURES}/old-copy").json() == body
    (event,) = _events(before)
    assert (event.type, event.feature_name, event.project, event.environment) == (
        "feature-created",
        "old-copy",
        "default",
        None,
    )
    assert (event.data, event.pre_data, event.tags) == (
        {
            "name": "old-copy",
            "description": "Old",
            "type": "kill-switch",
            "project": "default",
            "stale": stale,
            "createdAt": body["createdAt"],
            "lastSeenAt": None,
            "impressionData": True,
            "archived": False,
        },
        None,
        [],
    )
    payload = client_token_client.get("/api/client/features")
    assert payload.status_code == 200
    (flag,) = [f for f in payload.json()["features"] if f["name"] == "old-copy"]
    assert flag == {
        "name": "old-copy",
        "type": "kill-switch",
        "description": "Old",
        "project": "default",
        "enabled": False,
        "stale": stale,
        "impressionData": True,
        "strategies": [],
        "variants": [],
    }


def test_clone__reaches_sdks_once_turned_on(admin_client, client_token_client, source):
    post(admin_client, f"{FLAG}/clone", {"name": "copy"})
    assert post(admin_client, f"{FEATURES}/copy/environments/development/on").status_code == 200

    response = client_token_client.get("/api/client/features")

    assert response.status_code == 200
    (flag,) = [f for f in response.json()["features"] if f["name"] == "copy"]
    assert flag["enabled"] is True
    assert flag["type"] == "experiment"
    assert flag["impressionData"] is True
    assert [s["parameters"]["groupId"] for s in flag["strategies"]] == ["copy"]
    # As Unleash 8.2 serves it: a parent that must be off names no variants.
    assert flag["dependencies"] == [{"feature": "parent", "enabled": False}]
    assert flag["variants"] == ENV_VARIANTS


@pytest.mark.parametrize("name", ["checkout", "parent"], ids=["itself", "other-flag"])
def test_clone__taken_name__409_nothing_written(admin_client, source, name):
    before = _last_event_id()

    response = post(admin_client, f"{FLAG}/clone", {"name": name})

    assert_error(response, 409, "NameExistsError")
    assert _events(before) == []


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="no-name"),
        pytest.param({"name": "a b"}, id="not-url-friendly"),
        pytest.param({"name": "copy", "replaceGroupId": "yes"}, id="replace-not-boolean"),
    ],
)
def test_clone__invalid_body__400(admin_client, source, body):
    assert_error(post(admin_client, f"{FLAG}/clone", body), 400, "ValidationError")


def test_clone__unknown_flag__404(admin_client, db):
    response = post(admin_client, f"{FEATURES}/nope/clone", {"name": "copy"})

    assert_error(response, 404, "NotFoundError")


def test_clone__viewer__403(viewer_client, source):
    assert post(viewer_client, f"{FLAG}/clone", {"name": "copy"}).status_code == 403


def test_clone__client_token__403(client_token_client, source):
    assert post(client_token_client, f"{FLAG}/clone", {"name": "copy"}).status_code == 403


def test_clone__anonymous__401(anon_client, source):
    assert post(anon_client, f"{FLAG}/clone", {"name": "copy"}).status_code == 401


def test_patch__copies_that_outgrow_a_request_body__400_nothing_stored(admin_client):
    # Each copy of the list into itself doubles it: 22 of them made 4 million constraints.
    strategy = _review_strategy(admin_client)
    doubling = [{"op": "copy", "from": "/constraints", "path": "/constraints/-"}] * 22

    response = admin_client.patch(
        f"{_REVIEW_URL}/{strategy['id']}", json.dumps(doubling), content_type="application/json"
    )

    assert response.status_code == 400
    assert "would grow past" in response.json()["message"]
    assert (
        admin_client.get(f"{_REVIEW_URL}/{strategy['id']}").json()["constraints"]
        == (strategy["constraints"])
    )


_REVIEW_URL = "/api/admin/projects/default/features/grown/environments/development/strategies"


def _review_strategy(client) -> dict:
    assert (
        client.post(
            "/api/admin/projects/default/features",
            json.dumps({"name": "grown"}),
            content_type="application/json",
        ).status_code
        == 201
    )
    body = {
        "name": "flexibleRollout",
        "constraints": [{"contextName": "userId", "operator": "IN", "values": ["a", "b"]}],
    }
    response = client.post(_REVIEW_URL, json.dumps(body), content_type="application/json")
    assert response.status_code == 200
    return response.json()
