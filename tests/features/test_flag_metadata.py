"""A flag's metadata over HTTP (updateFeature, patchFeature, staleFeatures, validateFeature,
getFeatureEnvironment) and one archived flag (reviveFeature, deleteFeature), answered as
Unleash 8.2 answers them (measured against the reference), except where noted."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from features.models import Feature, FeatureEnvironment
from flagadmin.core.models import AuditEvent, TokenType
from tests.conftest import assert_error
from tests.factories import make_token

FEATURES = "/api/admin/projects/default/features"


def send(client, method: str, url: str, body=None):
    data = None if body is None else json.dumps(body)
    return getattr(client, method)(url, data, content_type="application/json")


@pytest.fixture
def flag(admin_client) -> str:
    body = {"name": "checkout", "description": "d1", "type": "experiment", "impressionData": True}
    assert send(admin_client, "post", FEATURES, body).status_code == 201
    return "checkout"


def _events(*types: str) -> list[tuple]:
    return list(
        AuditEvent.objects.filter(type__in=types)
        .order_by("id")
        .values_list("type", "feature_name", "data", "pre_data")
    )


def _row(name: str = "checkout", **changes) -> dict:
    feature = Feature.objects.get(name=name)
    return {
        "name": name,
        "description": "d1",
        "type": "experiment",
        "project": "default",
        "stale": False,
        "createdAt": feature.created_at.isoformat().replace("+00:00", "Z"),
        "impressionData": True,
        "archived": False,
        **changes,
    }


# --- PUT (updateFeature) ---------------------------------------------------------------------


def test_put__200_row_and_metadata_event(admin_client, flag):
    body = {"description": "d2", "type": "kill-switch", "impressionData": False}

    response = send(admin_client, "put", f"{FEATURES}/checkout", body)

    assert response.status_code == 200
    assert response.json() == _row(description="d2", type="kill-switch", impressionData=False)
    [(kind, name, data, pre)] = _events("feature-metadata-updated")
    assert (kind, name, data["type"], pre["type"]) == (
        "feature-metadata-updated",
        "checkout",
        "kill-switch",
        "experiment",
    )
    assert _events("feature-stale-on", "feature-stale-off") == []


def test_put__left_out_fields_stay__unlike_unleash_82(admin_client, flag):
    # Unleash 8.2 documents "left untouched" but resets type, stale and impressionData.
    response = send(admin_client, "put", f"{FEATURES}/checkout", {"description": "d2"})

    assert response.json() == _row(description="d2")


def test_put__name_and_project__same_name_ok_project_ignored(admin_client, flag):
    body = {"name": "checkout", "project": "other", "description": ""}

    response = send(admin_client, "put", f"{FEATURES}/checkout", body)

    assert response.json() == _row(description=None)


def test_put__stale__stale_on_event_and_client_api(admin_client, flag):
    response = send(admin_client, "put", f"{FEATURES}/checkout", {"stale": True})

    assert response.json() == _row(stale=True)
    assert [e[0] for e in _events("feature-metadata-updated", "feature-stale-on")] == [
        "feature-metadata-updated",
        "feature-stale-on",
    ]
    sdk = APIClient()
    sdk.credentials(HTTP_AUTHORIZATION=make_token(TokenType.CLIENT, projects=["*"])[1])
    [served] = sdk.get("/api/client/features").json()["features"]
    assert (served["name"], served["stale"], served["impressionData"]) == ("checkout", True, True)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"name": "other"}, "/body/name", id="other-name"),
        pytest.param({"type": "nosuch"}, "/body/type", id="unknown-type"),
        pytest.param({"stale": "yes"}, "/body/stale", id="stale-not-boolean"),
        pytest.param({"impressionData": 1}, "/body/impressionData", id="impression-not-boolean"),
        pytest.param({"description": 5}, "/body/description", id="description-not-string"),
    ],
)
def test_put__invalid__400_unchanged(admin_client, flag, body, path):
    response = send(admin_client, "put", f"{FEATURES}/checkout", body)

    error = assert_error(response, 400, "ValidationError")
    assert [detail["path"] for detail in error["details"]] == [path]
    assert _row() == send(admin_client, "put", f"{FEATURES}/checkout", {}).json()


def test_put__other_project__404_as_unleash(admin_client, flag):
    response = send(admin_client, "put", "/api/admin/projects/nope/features/checkout", {})

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'There\'s no feature named "checkout" in project "nope", but there\'s a feature '
        'with that name in project "default"'
    )


def test_put__archived__400(admin_client, flag):
    # Unleash 8.2 revives an archived flag on PUT (its `archived` defaults to false).
    send(admin_client, "delete", f"{FEATURES}/checkout")

    response = send(admin_client, "put", f"{FEATURES}/checkout", {"description": "x"})

    assert_error(response, 400, "ArchivedFeatureError")
    assert Feature.objects.get(name="checkout").archived_at is not None


def test_put__viewer__403(viewer_client, flag):
    assert_error(send(viewer_client, "put", f"{FEATURES}/checkout", {}), 403, "NoAccessError")


def test_put__anonymous__401(anon_client, flag):
    assert send(anon_client, "put", f"{FEATURES}/checkout", {}).status_code == 401


def test_put__client_token__403(client_token_client, flag):
    assert send(client_token_client, "put", f"{FEATURES}/checkout", {}).status_code == 403


def test_put__form_body__415(admin_client, flag):
    response = admin_client.put(f"{FEATURES}/checkout", "a=b", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")  # Unleash's spelling


# --- PATCH (patchFeature) --------------------------------------------------------------------


def test_patch__200_stale_on_and_description(admin_client, flag):
    ops = [
        {"op": "replace", "path": "/stale", "value": True},
        {"op": "replace", "path": "/description", "value": "pd"},
        {"op": "replace", "path": "/name", "value": "ignored"},
        {"op": "replace", "path": "/nosuch", "value": 1},
    ]

    response = send(admin_client, "patch", f"{FEATURES}/checkout", ops)

    assert response.status_code == 200
    assert response.json() == _row(stale=True, description="pd")
    assert [e[0] for e in _events("feature-metadata-updated", "feature-stale-on")] == [
        "feature-metadata-updated",
        "feature-stale-on",
    ]


def test_patch__remove__takes_unleash_default(admin_client, flag):
    ops = [{"op": "remove", "path": "/type"}, {"op": "remove", "path": "/description"}]

    response = send(admin_client, "patch", f"{FEATURES}/checkout", ops)

    assert response.json() == _row(type="release", description=None)


def test_patch__variants__403_operation_denied(admin_client, flag):
    ops = [{"op": "replace", "path": "/variants", "value": []}]

    response = send(admin_client, "patch", f"{FEATURES}/checkout", ops)

    assert assert_error(response, 403, "OperationDeniedError")["message"] == (
        "Changing variants is done via PATCH operation to "
        "/api/admin/projects/:project/features/:feature/variants"
    )


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param({"op": "replace"}, id="not-a-list"),
        pytest.param([{"op": "bogus", "path": "/type"}], id="unknown-op"),
        pytest.param([{"op": "replace", "path": "/type", "value": "zz"}], id="unknown-type"),
        # Unleash 8.2 answers 500 UnknownError.
        pytest.param([{"op": "test", "path": "/type", "value": "zz"}], id="failed-test"),
        pytest.param([{"op": "remove", "path": "/nosuch"}], id="remove-missing"),
        pytest.param([{"op": "replace", "path": "/a/b", "value": 1}], id="deep-path"),
        pytest.param([{"op": "replace", "path": "", "value": [1]}], id="whole-document"),
    ],
)
def test_patch__invalid__400_unchanged(admin_client, flag, ops):
    response = send(admin_client, "patch", f"{FEATURES}/checkout", ops)

    assert_error(response, 400, "ValidationError")
    assert _events("feature-metadata-updated") == []


def test_patch__viewer__403(viewer_client, flag):
    response = send(viewer_client, "patch", f"{FEATURES}/checkout", [])

    assert_error(response, 403, "NoAccessError")


def test_patch__unknown_flag__404(admin_client, flag):
    # Unleash 8.2: 404 NotFoundError "No feature flag found"; the message here names the flag
    # and the project, as every other flag path's.
    ops = [{"op": "replace", "path": "/description", "value": "x"}]
    response = send(admin_client, "patch", f"{FEATURES}/nosuch", ops)

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'There\'s no feature named "nosuch" in project "default".'
    )
    assert _events("feature-metadata-updated") == []


# --- POST /projects/:projectId/stale (staleFeatures) ------------------------------------------


def test_stale__202_events_per_changed_flag(admin_client, flag):
    send(admin_client, "post", FEATURES, {"name": "other"})
    send(
        admin_client,
        "post",
        "/api/admin/projects/default/stale",
        {"features": ["other"], "stale": True},
    )

    body = {"features": ["checkout", "other", "nosuch"], "stale": True}
    response = send(admin_client, "post", "/api/admin/projects/default/stale", body)

    assert response.status_code == 202
    assert response.content == b""
    assert sorted(Feature.objects.filter(stale=True).values_list("name", flat=True)) == [
        "checkout",
        "other",
    ]
    assert _events("feature-stale-on", "feature-stale-off") == [
        ("feature-stale-on", "other", None, None),
        ("feature-stale-on", "checkout", None, None),
    ]


def test_stale__flag_of_other_project__403(admin_client, flag):
    send(admin_client, "post", "/api/admin/projects", {"id": "other", "name": "Other"})

    body = {"features": ["checkout"], "stale": True}
    response = send(admin_client, "post", "/api/admin/projects/other/stale", body)

    assert assert_error(response, 403, "InvalidOperationError")["message"] == (
        "The operation could not be completed. The features exist, but the provided project "
        'ids ("default") does not match the project provided in request URL ("other").'
    )
    assert not Feature.objects.get(name="checkout").stale


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"features": ["checkout"]}, id="no-stale"),
        pytest.param({"stale": True}, id="no-features"),
        pytest.param({"features": "checkout", "stale": True}, id="features-not-list"),
    ],
)
def test_stale__invalid__400(admin_client, flag, body):
    response = send(admin_client, "post", "/api/admin/projects/default/stale", body)

    assert_error(response, 400, "ValidationError")


def test_stale__viewer__403(viewer_client, flag):
    body = {"features": ["checkout"], "stale": True}
    response = send(viewer_client, "post", "/api/admin/projects/default/stale", body)

    assert_error(response, 403, "NoAccessError")


# --- stale changes in the event log (GET /api/admin/events/:featureName) ----------------------


def _stale_event(event_type: str, event_id: int) -> dict:
    """A stale event as Unleash 8.2's /api/admin/events shows it (measured: PATCH /stale and
    POST /projects/default/stale with an admin token): no data, no pre-data, the flag and its
    project, the token's name as createdBy and the admin token user's id."""
    event = AuditEvent.objects.get(pk=event_id)
    return {
        "id": event_id,
        "type": event_type,
        "createdBy": "admin-tok",
        "createdAt": event.created_at.isoformat().replace("+00:00", "Z"),
        "createdByUserId": -42,
        "data": None,
        "preData": None,
        "tags": [],
        "featureName": "checkout",
        "project": "default",
        "environment": None,
    }


@pytest.mark.parametrize(
    ("method", "url", "on", "off"),
    [
        pytest.param(
            "patch",
            f"{FEATURES}/checkout",
            [{"op": "replace", "path": "/stale", "value": True}],
            [{"op": "replace", "path": "/stale", "value": False}],
            id="patch",
        ),
        pytest.param(
            "post",
            "/api/admin/projects/default/stale",
            {"features": ["checkout"], "stale": True},
            {"features": ["checkout"], "stale": False},
            id="project-stale",
        ),
    ],
)
def test_stale__events_api__feature_stale_on_then_off_as_unleash(
    admin_client, flag, method, url, on, off
):
    assert send(admin_client, method, url, on).status_code in (200, 202)
    assert send(admin_client, method, url, off).status_code in (200, 202)

    response = admin_client.get("/api/admin/events/checkout")

    assert response.status_code == 200
    stale = [e for e in response.json()["events"] if e["type"].startswith("feature-stale")]
    assert stale == [
        _stale_event("feature-stale-off", stale[0]["id"]),
        _stale_event("feature-stale-on", stale[1]["id"]),
    ]
    # PATCH also records the metadata update before each (as Unleash); the batch does not.
    metadata = [e["type"] for e in response.json()["events"]].count("feature-metadata-updated")
    assert metadata == (2 if method == "patch" else 0)


# --- POST /features/validate (validateFeature) ------------------------------------------------


def test_validate__free__200(viewer_client, flag):
    response = send(viewer_client, "post", "/api/admin/features/validate", {"name": "free"})

    assert (response.status_code, response.content) == (200, b"")


@pytest.mark.parametrize(
    ("archived", "message"),
    [
        pytest.param(False, "A flag with that name already exists", id="active"),
        pytest.param(True, "An archived flag with that name already exists", id="archived"),
    ],
)
def test_validate__taken__409(admin_client, flag, archived, message):
    if archived:
        send(admin_client, "delete", f"{FEATURES}/checkout")

    response = send(admin_client, "post", "/api/admin/features/validate", {"name": "checkout"})

    assert assert_error(response, 409, "NameExistsError")["message"] == message


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="missing"),
        pytest.param({"name": ""}, id="empty"),
        pytest.param({"name": "bad name"}, id="not-url-friendly"),
        pytest.param({"name": 5}, id="not-string"),
    ],
)
def test_validate__invalid__400(admin_client, body):
    response = send(admin_client, "post", "/api/admin/features/validate", body)

    assert_error(response, 400, "ValidationError")


def test_validate__anonymous__401(anon_client, db):
    response = send(anon_client, "post", "/api/admin/features/validate", {"name": "x"})

    assert response.status_code == 401


# --- GET .../environments/:environment (getFeatureEnvironment) --------------------------------


def test_feature_environment__200_shape(viewer_client, admin_client, flag):
    send(admin_client, "post", f"{FEATURES}/checkout/environments/development/on")
    [strategy] = send(admin_client, "get", f"{FEATURES}/checkout").json()["environments"][0][
        "strategies"
    ]

    response = viewer_client.get(f"{FEATURES}/checkout/environments/development")

    assert response.status_code == 200
    assert response.json() == {
        "name": "checkout",
        "environment": "development",
        "enabled": True,
        "strategies": [strategy],
    }


def test_feature_environment__unknown__404(admin_client, flag):
    response = admin_client.get(f"{FEATURES}/checkout/environments/nosuch")

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        "Could not find checkout in nosuch"
    )


def test_feature_environment__unknown_flag__404(admin_client, flag):
    response = admin_client.get(f"{FEATURES}/nosuch/environments/development")

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'There\'s no feature named "nosuch" in project "default".'
    )


def test_feature_environment__client_token__403(client_token_client, flag):
    response = client_token_client.get(f"{FEATURES}/checkout/environments/development")

    assert_error(response, 403, "NoAccessError")


# --- the archive: reviveFeature, deleteFeature ------------------------------------------------


def test_revive__200_disabled_event(admin_client, flag):
    send(admin_client, "post", f"{FEATURES}/checkout/environments/development/on")
    send(admin_client, "delete", f"{FEATURES}/checkout")

    response = admin_client.post("/api/admin/archive/revive/checkout")

    assert (response.status_code, response.content) == (200, b"")
    assert Feature.objects.get(name="checkout").archived_at is None
    assert not FeatureEnvironment.objects.filter(feature_id="checkout", enabled=True).exists()
    assert [e[:2] for e in _events("feature-revived")] == [("feature-revived", "checkout")]


def test_revive__active__unchanged(admin_client, flag):
    # Unleash 8.2 turns an active flag off everywhere and records a revival.
    send(admin_client, "post", f"{FEATURES}/checkout/environments/development/on")

    response = admin_client.post("/api/admin/archive/revive/checkout")

    assert response.status_code == 200
    assert FeatureEnvironment.objects.filter(feature_id="checkout", enabled=True).exists()
    assert _events("feature-revived") == []


def test_revive__unknown__404(admin_client, db):
    response = admin_client.post("/api/admin/archive/revive/nosuch")

    assert assert_error(response, 404, "NotFoundError")["message"] == "No feature flag found"


def test_revive__viewer__403(viewer_client, flag):
    assert_error(viewer_client.post("/api/admin/archive/revive/checkout"), 403, "NoAccessError")


def test_delete__archived__200_event(admin_client, flag):
    send(admin_client, "delete", f"{FEATURES}/checkout")

    response = admin_client.delete("/api/admin/archive/checkout")

    assert (response.status_code, response.content) == (200, b"")
    assert not Feature.objects.filter(name="checkout").exists()
    assert [e[:2] for e in _events("feature-deleted")] == [("feature-deleted", "checkout")]


@pytest.mark.parametrize("name", ["checkout", "nosuch"])
def test_delete__active_or_unknown__200_unchanged(admin_client, flag, name):
    response = admin_client.delete(f"/api/admin/archive/{name}")

    assert response.status_code == 200
    assert Feature.objects.filter(name="checkout").exists()
    assert _events("feature-deleted") == []


def test_delete__parent_of_active_flag__403(admin_client, flag):
    send(admin_client, "post", FEATURES, {"name": "child"})
    send(admin_client, "post", f"{FEATURES}/child/dependencies", {"feature": "checkout"})
    Feature.objects.filter(name="checkout").update(archived_at="2024-01-01T00:00:00Z")

    response = admin_client.delete("/api/admin/archive/checkout")

    assert_error(response, 403, "InvalidOperationError")
    assert Feature.objects.filter(name="checkout").exists()


def test_delete__viewer__403(viewer_client, flag):
    assert_error(viewer_client.delete("/api/admin/archive/checkout"), 403, "NoAccessError")
