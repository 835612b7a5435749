"""PATCH of a strategy (Unleash's `patchFeatureStrategy`) and cloning a flag (`cloneFeature`),
each answered as Unleash 8.2 answers them (checked against the reference server)."""

from __future__ import annotations

import json

import pytest

from features.models import FeatureEnvironment
from flagadmin.models import AuditEvent
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
