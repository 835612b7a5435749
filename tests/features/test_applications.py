"""What SDKs reported, read back: GET /api/admin/metrics/applications, /:appName, and
GET /api/admin/client-metrics/features/:name and /raw (Unleash 8.2's getApplications,
getApplication, getFeatureUsageSummary and getRawFeatureMetrics)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from features.models import ClientInstance, FeatureUsageBucket
from tests.conftest import assert_error
from tests.factories import FeatureFactory

STARTED = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
SEEN = datetime(2026, 4, 2, 9, 0, tzinfo=UTC)


def current_hour() -> datetime:
    return timezone.now().replace(minute=0, second=0, microsecond=0)


@pytest.fixture
def instances(db):
    ClientInstance.objects.create(
        app_name="web",
        instance_id="web-1",
        environment="production",
        sdk_version="unleash-client-python:6.0.0",
        strategies=["default", "flexibleRollout"],
        started_at=STARTED,
        last_seen_at=SEEN,
    )
    ClientInstance.objects.create(
        app_name="web",
        instance_id="web-2",
        environment="development",
        sdk_version="unleash-client-python:6.0.0",
        strategies=["default", "my-custom"],
        started_at=STARTED + timedelta(hours=1),
        last_seen_at=SEEN + timedelta(hours=1),
    )
    ClientInstance.objects.create(
        app_name="api", instance_id="api-1", environment="production", last_seen_at=SEEN
    )


def test_applications__whole_body_by_name(admin_client, instances):
    response = admin_client.get("/api/admin/metrics/applications")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "applications": [
            {
                "appName": "api",
                "createdAt": "2026-04-02T09:00:00Z",
                "updatedAt": "2026-04-02T09:00:00Z",
                "description": None,
                "strategies": [],
                "url": None,
                "color": None,
                "icon": None,
                "usage": [{"project": "*", "environments": ["production"]}],
            },
            {
                "appName": "web",
                "createdAt": "2026-04-01T09:00:00Z",
                "updatedAt": "2026-04-02T10:00:00Z",
                "description": None,
                "strategies": ["default", "flexibleRollout", "my-custom"],
                "url": None,
                "color": None,
                "icon": None,
                "usage": [{"project": "*", "environments": ["development", "production"]}],
            },
        ],
        "total": 2,
    }


@pytest.mark.parametrize(
    ("query", "expected", "total"),
    [
        pytest.param({"sortOrder": "desc"}, ["web", "api"], 2, id="desc"),
        pytest.param({"limit": "1", "offset": "1"}, ["web"], 2, id="page"),
        pytest.param({"query": "WE"}, ["web"], 1, id="query"),
        pytest.param({"query": "zz,ap"}, ["api"], 1, id="query-terms"),
    ],
)
def test_applications__query__names_and_total(admin_client, instances, query, expected, total):
    body = admin_client.get("/api/admin/metrics/applications", query).json()

    assert [app["appName"] for app in body["applications"]] == expected
    assert body["total"] == total


@pytest.mark.parametrize(
    ("query", "path", "message"),
    [
        pytest.param(
            {"limit": "1001"},
            "/query/limit",
            'The `/query/limit` property must be from 1 to 1000. You sent "1001".',
            id="limit",
        ),
        pytest.param(
            {"offset": "-1"},
            "/query/offset",
            'The `/query/offset` property must be a whole number of 0 or more. You sent "-1".',
            id="offset",
        ),
        pytest.param(
            {"sortOrder": "up"},
            "/query/sortOrder",
            "The `/query/sortOrder` property must be equal to one of the allowed values: "
            '"asc", "desc". You sent "up".',
            id="sort-order",
        ),
    ],
)
def test_applications__invalid_query__400(admin_client, db, query, path, message):
    """Unleash 8.2 reads these as its defaults (1000, 0, asc)."""
    body = assert_error(
        admin_client.get("/api/admin/metrics/applications", query), 400, "ValidationError"
    )

    assert body["details"] == [{"path": path, "message": message}]


def test_applications__fixed_number_of_queries(
    admin_client, instances, django_assert_max_num_queries
):
    admin_client.get("/api/admin/metrics/applications")

    with django_assert_max_num_queries(4):  # token, count, page, the page's instances
        assert admin_client.get("/api/admin/metrics/applications").status_code == 200


def test_application__whole_body(admin_client, instances):
    FeatureFactory(name="checkout", created_at=STARTED, description="Pay")
    for name in ("checkout", "gone"):
        FeatureUsageBucket.objects.create(
            feature_name=name,
            environment="production",
            app_name="web",
            hour=current_hour(),
            yes=1,
        )
    FeatureUsageBucket.objects.create(  # two days ago: not among the flags seen
        feature_name="old",
        environment="production",
        app_name="web",
        hour=current_hour() - timedelta(days=2),
    )

    response = admin_client.get("/api/admin/metrics/applications/web")

    assert response.status_code == 200
    body = response.json()
    assert body["strategies"][0]["name"] == "default"
    assert body["strategies"][0]["editable"] is False
    assert body == {
        "appName": "web",
        "createdAt": "2026-04-01T09:00:00Z",
        "description": None,
        "url": None,
        "color": None,
        "icon": None,
        "strategies": [
            body["strategies"][0],
            body["strategies"][1],
            {"name": "my-custom", "notFound": True},
        ],
        "instances": [
            {
                "appName": "web",
                "instanceId": "web-1",
                "sdkVersion": "unleash-client-python:6.0.0",
                "lastSeen": "2026-04-02T09:00:00Z",
                "createdAt": "2026-04-01T09:00:00Z",
                "environment": "production",
            },
            {
                "appName": "web",
                "instanceId": "web-2",
                "sdkVersion": "unleash-client-python:6.0.0",
                "lastSeen": "2026-04-02T10:00:00Z",
                "createdAt": "2026-04-01T10:00:00Z",
                "environment": "development",
            },
        ],
        "seenToggles": [
            {
                "name": "checkout",
                "description": "Pay",
                "type": "release",
                "project": "default",
                "stale": False,
                "createdAt": "2026-04-01T09:00:00Z",
                "impressionData": False,
            },
            {"name": "gone", "notFound": True},
        ],
        "links": {"self": "/api/applications/web"},
    }
    assert body["strategies"][1]["name"] == "flexibleRollout"


def test_application__unknown__404(admin_client, db):
    body = assert_error(
        admin_client.get("/api/admin/metrics/applications/nope"), 404, "NotFoundError"
    )

    assert body["message"] == "Could not find appName=nope"


@pytest.fixture
def usage(db):
    hour = current_hour()
    rows = [
        ("production", "web", hour, 5, 2),
        ("production", "api", hour, 1, 0),
        ("development", "web", hour - timedelta(hours=1), 7, 7),  # before the last hour
        ("development", "web", hour - timedelta(hours=30), 9, 9),  # past the raw window
    ]
    for environment, app, at, yes, no in rows:
        FeatureUsageBucket.objects.create(
            feature_name="checkout", environment=environment, app_name=app, hour=at, yes=yes, no=no
        )
    return hour


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_feature_usage__last_hour_and_applications(admin_client, usage):
    response = admin_client.get("/api/admin/client-metrics/features/checkout")

    assert response.status_code == 200
    assert response.json() == {
        "version": 1,
        "maturity": "stable",
        "featureName": "checkout",
        "lastHourUsage": [
            {"environment": "production", "timestamp": iso(usage), "yes": 6, "no": 2}
        ],
        "seenApplications": ["api", "web"],
    }


def test_feature_usage__never_reported__empty(admin_client, db):
    assert admin_client.get("/api/admin/client-metrics/features/nope").json() == {
        "version": 1,
        "maturity": "stable",
        "featureName": "nope",
        "lastHourUsage": [],
        "seenApplications": [],
    }


def test_raw_metrics__each_hour_environment_and_app_zero_filled(admin_client, usage):
    response = admin_client.get(
        "/api/admin/client-metrics/features/checkout/raw", {"hoursBack": "2"}
    )

    assert response.status_code == 200
    previous = usage - timedelta(hours=1)

    def row(at, app, environment, yes, no):
        return {
            "timestamp": iso(at),
            "no": no,
            "yes": yes,
            "appName": app,
            "environment": environment,
            "featureName": "checkout",
        }

    assert response.json() == {
        "version": 1,
        "maturity": "stable",
        "data": [
            row(previous, "api", "development", 0, 0),
            row(previous, "web", "development", 7, 7),
            row(previous, "api", "production", 0, 0),
            row(previous, "web", "production", 0, 0),
            row(usage, "api", "development", 0, 0),
            row(usage, "web", "development", 0, 0),
            row(usage, "api", "production", 1, 0),
            row(usage, "web", "production", 5, 2),
        ],
    }


def test_raw_metrics__default_24_hours(admin_client, usage):
    data = admin_client.get("/api/admin/client-metrics/features/checkout/raw").json()["data"]

    assert len(data) == 24 * 2 * 2  # hours x environments x applications


@pytest.mark.parametrize("hours_back", ["0", "49", "x", "1.5"])
def test_raw_metrics__hours_back_out_of_range__400(admin_client, db, hours_back):
    """Unleash 8.2 reads these as 24 hours."""
    body = assert_error(
        admin_client.get("/api/admin/client-metrics/features/f/raw", {"hoursBack": hours_back}),
        400,
        "ValidationError",
    )

    assert body["details"] == [
        {
            "path": "/query/hoursBack",
            "message": "The `/query/hoursBack` property must be a whole number of hours from 1 "
            f'to 48. You sent "{hours_back}".',
        }
    ]


URLS = [
    "/api/admin/metrics/applications",
    "/api/admin/metrics/applications/web",
    "/api/admin/client-metrics/features/checkout",
    "/api/admin/client-metrics/features/checkout/raw",
]


@pytest.mark.parametrize("url", URLS)
def test_metrics_reads__viewer__may_read(viewer_client, instances, url):
    assert viewer_client.get(url).status_code == 200


@pytest.mark.parametrize("url", URLS)
def test_metrics_reads__anonymous__401(anon_client, db, url):
    assert_error(anon_client.get(url), 401, "AuthenticationRequired")


@pytest.mark.parametrize("url", URLS)
def test_metrics_reads__client_token__403(client_token_client, url):
    assert_error(client_token_client.get(url), 403, "NoAccessError")
