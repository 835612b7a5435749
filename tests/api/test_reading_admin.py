"""GET /api/admin/ui-config, /api/admin/events and /api/admin/events/:featureName."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from flagadmin.core.models import AuditEvent
from tests.conftest import assert_error
from tests.factories import AuditEventFactory

UI_CONFIG = "/api/admin/ui-config"
EVENTS = "/api/admin/events"
T0 = datetime(2026, 1, 2, 3, 4, 5, 123000, tzinfo=UTC)


# --- ui-config ---------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["admin_client", "viewer_client"])
def test_ui_config__any_principal__version_url_limits(db, request, fixture, settings):
    # Given a server behind a path, with two of its limits lowered
    settings.PUBLIC_BASE_URL = "https://flags.example.com/unleash"
    settings.SEGMENTS_LIMIT = 7
    settings.CONSTRAINTS_LIMIT = 3

    # When
    response = request.getfixturevalue(fixture).get(UI_CONFIG)

    # Then: Unleash 8.2's API level, flagadmin's limits, Unleash's defaults for the rest
    assert response.status_code == 200
    assert response.json() == {
        "environment": "Open Source",
        "flags": {},
        "version": "8.2.0",
        "unleashUrl": "https://flags.example.com/unleash",
        "baseUriPath": "/unleash",
        "authenticationType": "custom",
        "versionInfo": {
            "current": {"oss": "8.2.0", "enterprise": ""},
            "latest": {},
            "isLatest": True,
        },
        "resourceLimits": {
            "segmentValues": 1000,
            "strategySegments": 5,
            "signalEndpoints": 5,
            "actionSetActions": 10,
            "actionSetsPerProject": 5,
            "actionSetFilters": 5,
            "actionSetFilterValues": 25,
            "signalTokensPerEndpoint": 5,
            "featureEnvironmentStrategies": 30,
            "constraintValues": 250,
            "constraints": 3,
            "environments": 50,
            "projects": 500,
            "apiTokens": 2000,
            "segments": 7,
            "featureFlags": 5000,
            "releaseTemplates": 10,
        },
        "disablePasswordAuth": True,
        "maintenanceMode": False,
    }


def test_ui_config__base_url_at_root__empty_base_path(admin_client, settings):
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"

    body = admin_client.get(UI_CONFIG).json()

    assert (body["unleashUrl"], body["baseUriPath"]) == ("http://127.0.0.1:8000", "")


def test_ui_config__no_query_past_authentication(admin_client, django_assert_max_num_queries):
    with django_assert_max_num_queries(2):  # the token lookup, its first-use `seenAt`
        assert admin_client.get(UI_CONFIG).status_code == 200


def test_ui_config__anonymous__401(anon_client, db):
    assert_error(anon_client.get(UI_CONFIG), 401, "AuthenticationRequired")


def test_ui_config__client_token__403(client_token_client):
    assert_error(client_token_client.get(UI_CONFIG), 403, "NoAccessError")


# --- events ------------------------------------------------------------------------------


def _event(seconds: int, **kwargs) -> AuditEvent:
    return AuditEventFactory(created_at=T0 + timedelta(seconds=seconds), **kwargs)


def _ids(response) -> list[int]:
    return [event["id"] for event in response.json()["events"]]


@pytest.fixture
def no_events(db):
    AuditEvent.objects.all().delete()  # whatever the fixtures' token creation wrote


def test_events__admin__unleash_shape_newest_first(admin_client, no_events):
    # Given two events, the newer one a flag's, the older an instance event
    older = _event(
        0,
        type="api-token-deleted",
        created_by="admin",
        created_by_user_id=-42,
        pre_data={"tokenName": "ci"},
        project="default",
        environment="production",
    )
    newer = _event(
        1,
        type="feature-created",
        created_by="ann@example.com",
        created_by_user_id=7,
        data={"name": "checkout"},
        tags=[{"type": "simple", "value": "web"}],
        feature_name="checkout",
        project="default",
    )

    # When
    response = admin_client.get(EVENTS)

    # Then
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "version": 1,
        "events": [
            {
                "id": newer.id,
                "type": "feature-created",
                "createdBy": "ann@example.com",
                "createdAt": "2026-01-02T03:04:06.123000Z",
                "createdByUserId": 7,
                "data": {"name": "checkout"},
                "preData": None,
                "tags": [{"type": "simple", "value": "web"}],
                "featureName": "checkout",
                "project": "default",
                "environment": None,
            },
            {
                "id": older.id,
                "type": "api-token-deleted",
                "createdBy": "admin",
                "createdAt": "2026-01-02T03:04:05.123000Z",
                "createdByUserId": -42,
                "data": None,
                "preData": {"tokenName": "ci"},
                "tags": [],
                "featureName": None,
                "project": "default",
                "environment": "production",
            },
        ],
        "totalEvents": 2,
    }


def test_events__same_time__newest_id_first(admin_client, no_events):
    first, second = _event(0), _event(0)

    assert _ids(admin_client.get(EVENTS)) == [second.id, first.id]


def test_events__many__newest_100_of_all(admin_client, no_events, django_assert_max_num_queries):
    events = [_event(second) for second in range(105)]
    admin_client.get(EVENTS)  # the token's first use writes its seenAt

    # the token lookup, on PostgreSQL the snapshot's SET, the page, the count
    with django_assert_max_num_queries(4):
        response = admin_client.get(EVENTS)

    assert _ids(response) == [event.id for event in reversed(events)][:100]
    assert response.json()["totalEvents"] == 105


def test_events__project__its_newest_50(admin_client, no_events, django_assert_max_num_queries):
    # Given 55 events of `web` (a flag's and others), and one of another project
    ours = [
        _event(second, project="web", feature_name="f" if second % 2 else None)
        for second in range(55)
    ]
    _event(100, project="default")
    admin_client.get(EVENTS)  # the token's first use writes its seenAt

    with django_assert_max_num_queries(4):
        response = admin_client.get(EVENTS, {"project": "web"})

    assert _ids(response) == [event.id for event in reversed(ours)][:50]
    assert response.json()["totalEvents"] == 55


@pytest.mark.parametrize(
    "path",
    [EVENTS, f"{EVENTS}?project=web", f"{EVENTS}/checkout"],
    ids=["newest", "project", "flag"],
)
def test_events__page_and_total__one_snapshot_planned_with_index_scans(
    admin_client, no_events, path
):
    # A total counted on 1,000,000 events must not be a sequential scan (issue 27,
    # bench/search.py): the log reads as the event search does.
    _event(0, project="web", feature_name="checkout")
    admin_client.get(path)  # the token's first use writes its seenAt

    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(path)

    assert response.status_code == 200
    assert response.json()["totalEvents"] == 1
    statements = [query["sql"] for query in captured.captured_queries]
    if connection.vendor == "postgresql":
        # the token lookup, the snapshot's settings (inside the test's transaction, without
        # its own SET TRANSACTION), the page, the count
        assert len(statements) == 4, statements
        assert statements[1].endswith("SET LOCAL enable_seqscan = off")
    else:
        assert len(statements) == 3, statements  # the token lookup, the page, the count
    assert "ORDER BY" in statements[-2]
    assert "COUNT(*)" in statements[-1]


def test_events__unknown_project__empty(admin_client, no_events):
    _event(0, project="default")

    response = admin_client.get(EVENTS, {"project": "nope"})

    assert response.json() == {"version": 1, "events": [], "totalEvents": 0}


def test_events__empty_project__all_events(admin_client, no_events):
    event = _event(0, project="default")

    assert _ids(admin_client.get(EVENTS, {"project": ""})) == [event.id]


@pytest.mark.parametrize("fixture", ["viewer_client", "editor_client", "client_token_client"])
def test_events__without_admin__403(db, request, fixture):
    assert_error(request.getfixturevalue(fixture).get(EVENTS), 403, "NoAccessError")


def test_events__admin_user__200(admin_user_client):
    assert admin_user_client.get(EVENTS).status_code == 200


def test_events__anonymous__401(anon_client, db):
    assert_error(anon_client.get(EVENTS), 401, "AuthenticationRequired")


# --- a flag's events ---------------------------------------------------------------------


def test_feature_events__viewer__its_newest_50_with_toggle_name(
    viewer_client, no_events, django_assert_max_num_queries
):
    # Given 52 events about `checkout` and one about another flag
    ours = [_event(second, feature_name="checkout", project="default") for second in range(52)]
    _event(100, feature_name="cart", project="default")
    viewer_client.get(f"{EVENTS}/checkout")  # the token's first use writes its seenAt

    with django_assert_max_num_queries(4):
        response = viewer_client.get(f"{EVENTS}/checkout")

    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["version", "toggleName", "events", "totalEvents"]
    assert (body["version"], body["toggleName"], body["totalEvents"]) == (1, "checkout", 52)
    assert _ids(response) == [event.id for event in reversed(ours)][:50]
    assert body["events"][0]["featureName"] == "checkout"


def test_feature_events__unknown_flag__empty(admin_client, no_events):
    response = admin_client.get(f"{EVENTS}/never-existed")

    assert response.status_code == 200
    assert response.json() == {
        "version": 1,
        "toggleName": "never-existed",
        "events": [],
        "totalEvents": 0,
    }


def test_feature_events__anonymous__401(anon_client, db):
    assert_error(anon_client.get(f"{EVENTS}/checkout"), 401, "AuthenticationRequired")


def test_feature_events__client_token__403(client_token_client):
    assert_error(client_token_client.get(f"{EVENTS}/checkout"), 403, "NoAccessError")
