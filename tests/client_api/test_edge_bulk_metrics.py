"""POST /api/client/metrics/bulk: the batches Unleash Edge sends upstream for its SDKs, in the
exact shape Edge serialises them (unleash-types' MetricsBatch: every optional field present,
`null` when unset), answered as Unleash 8.2 answers them."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from client_api.edge_serializers import MAX_BULK_COUNT
from features.models import ClientInstance, FeatureUsageBucket
from flagadmin.core.models import ApiToken, TokenType
from tests.conftest import assert_error
from tests.factories import ProjectFactory, UserFactory, make_token

BULK = "/api/client/metrics/bulk"
FEATURES = "/api/admin/projects/{project}/features"
STARTED = "2026-11-28T09:12:44.512Z"


def registration(app: str = "checkout", instance: str = "checkout-1", **changes) -> dict:
    """An SDK's registration as Edge forwards it (ClientApplication with Edge in connectVia)."""
    return {
        "appName": app,
        "connectVia": [{"appName": "unleash-edge", "instanceId": "edge-pod-1"}],
        "environment": "development",
        "instanceId": instance,
        "connectionId": None,
        "interval": 15000,
        "started": STARTED,
        "strategies": ["default", "flexibleRollout"],
        "sdkVersion": "unleash-client-node:6.12.1",
        "sdkType": "backend",
        "yggdrasilVersion": None,
        "platformName": None,
        "platformVersion": None,
        **changes,
    }


def metric(flag: str, yes: int, no: int, app: str = "checkout", **changes) -> dict:
    """One ClientMetricsEnv entry as Edge serialises it."""
    return {
        "featureName": flag,
        "appName": app,
        "environment": "development",
        "timestamp": "2026-11-28T09:00:00Z",
        "yes": yes,
        "no": no,
        "variants": {},
        "sdkVersion": None,
        "sdkType": None,
        "yggdrasilVersion": None,
        "platformName": None,
        "platformVersion": None,
        **changes,
    }


def batch(applications=(), metrics=(), **more) -> dict:
    return {"applications": list(applications), "metrics": list(metrics), **more}


def post(client: APIClient, body, url: str = BULK):
    return client.post(url, json.dumps(body), content_type="application/json")


def edge(projects: list[str] | None = None, environment: str = "development") -> APIClient:
    """Edge's HTTP client with a client token of one environment, as Edge posts each batch."""
    client = APIClient()
    token = make_token(TokenType.CLIENT, projects=projects or ["*"], environment=environment)[1]
    client.credentials(
        HTTP_AUTHORIZATION=token,
        HTTP_USER_AGENT="unleash-edge-19.10.0",
        HTTP_UNLEASH_APPNAME="unleash-edge",
        HTTP_UNLEASH_INSTANCEID="edge-pod-1",
    )
    return client


@pytest.fixture
def flags(admin_client) -> list[str]:
    names = ["checkout", "search"]
    for name in names:
        response = post(admin_client, {"name": name}, FEATURES.format(project="default"))
        assert response.status_code == 201
    return names


def buckets() -> list[tuple]:
    return list(
        FeatureUsageBucket.objects.order_by("feature_name", "app_name").values_list(
            "feature_name", "environment", "app_name", "yes", "no"
        )
    )


def test_bulk__edge_batch__202_counts_summed_and_instances_registered(flags):
    body = batch(
        [registration(), registration("search-api", "search-1", sdkType=None)],
        [
            metric("checkout", 3, 1),
            metric("checkout", 2, 0),  # a second hour's window of the same app and flag
            metric("search", 0, 4, app="search-api"),
            metric("checkout", 9, 9, environment="production"),
        ],
    )

    response = post(edge(), body)

    assert response.status_code == 202
    assert response.content == b""
    assert buckets() == [
        ("checkout", "development", "checkout", 5, 1),
        ("search", "development", "search-api", 0, 4),
    ]
    instances = ClientInstance.objects.order_by("app_name").values_list(
        "app_name", "instance_id", "environment", "sdk_version", "strategies", "interval"
    )
    assert list(instances) == [
        (
            "checkout",
            "checkout-1",
            "development",
            "unleash-client-node:6.12.1",
            ["default", "flexibleRollout"],
            15000,
        ),
        (
            "search-api",
            "search-1",
            "development",
            "unleash-client-node:6.12.1",
            ["default", "flexibleRollout"],
            15000,
        ),
    ]
    started = ClientInstance.objects.values_list("started_at", flat=True).first()
    assert started.isoformat() == "2026-11-28T09:12:44.512000+00:00"


def test_bulk__same_figures_as_sdk_metrics(admin_client, flags):
    """What Edge forwards adds up exactly as what the SDKs would have posted themselves."""
    sdk = edge()
    report = {
        "appName": "checkout",
        "instanceId": "checkout-1",
        "bucket": {"start": STARTED, "stop": STARTED, "toggles": {"checkout": {"yes": 3, "no": 1}}},
    }
    assert post(sdk, report, "/api/client/metrics").status_code == 202
    direct = buckets()
    projects = admin_client.get("/api/admin/projects").json()["projects"]
    direct_usage = next(p for p in projects if p["id"] == "default")["lastReportedFlagUsage"]
    FeatureUsageBucket.objects.all().delete()

    assert post(sdk, batch(metrics=[metric("checkout", 3, 1)])).status_code == 202

    assert buckets() == direct == [("checkout", "development", "checkout", 3, 1)]
    projects = admin_client.get("/api/admin/projects").json()["projects"]
    assert next(p for p in projects if p["id"] == "default")["lastReportedFlagUsage"] == (
        direct_usage
    )


def test_bulk__reports_add_up_with_sdk_metrics(flags):
    sdk = edge()
    report = {
        "appName": "checkout",
        "bucket": {"start": 1, "stop": 2, "toggles": {"checkout": {"yes": 1}}},
    }
    post(sdk, report, "/api/client/metrics")

    post(sdk, batch(metrics=[metric("checkout", 2, 3)]))

    assert buckets() == [("checkout", "development", "checkout", 3, 3)]


def test_bulk__other_project_unknown_zero_and_nameless_entries__skipped(admin_client, flags):
    ProjectFactory(id="web")
    post(admin_client, {"name": "web-banner"}, FEATURES.format(project="web"))
    body = batch(
        [registration(app="")],
        [
            metric("web-banner", 1, 1),
            metric("no-such-flag", 1, 1),
            metric("search", 0, 0),
            metric("checkout", 1, 0, app=""),
            metric("checkout", 7, 0),
        ],
    )

    response = post(edge(projects=["default"]), body)

    assert response.status_code == 202
    assert buckets() == [("checkout", "development", "checkout", 7, 0)]
    assert not ClientInstance.objects.exists()


def test_bulk__counted_in_the_tokens_environment_only(flags):
    body = batch(
        metrics=[metric("checkout", 1, 0), metric("checkout", 5, 5, environment="production")]
    )

    post(edge(environment="production"), body)

    assert buckets() == [("checkout", "production", "checkout", 5, 5)]


def test_bulk__instance_reported_twice__last_report_kept(db):
    body = batch([registration(sdkVersion="unleash-client-node:6.0.0"), registration()])

    assert post(edge(), body).status_code == 202

    assert list(ClientInstance.objects.values_list("instance_id", "sdk_version")) == [
        ("checkout-1", "unleash-client-node:6.12.1")
    ]


def test_bulk__registration_again__updates_the_instance(db):
    post(edge(), batch([registration(interval=1000)]))

    post(edge(), batch([registration(interval=2000, strategies=None)]))

    assert list(ClientInstance.objects.values_list("interval", "strategies")) == [(2000, [])]


def test_bulk__seen_tokens__last_use_recorded(db):
    seen, seen_secret = make_token(TokenType.CLIENT, name="sdk", environment="development")
    recent, recent_secret = make_token(TokenType.CLIENT, name="recent", environment="development")
    ApiToken.objects.filter(pk=recent.pk).update(last_used_at=timezone.now() - timedelta(seconds=5))
    recent.refresh_from_db()

    response = post(edge(), batch(seenTokens=[seen_secret, recent_secret, "nope", ""]))

    assert response.status_code == 202
    seen.refresh_from_db()
    assert seen.last_used_at is not None
    assert ApiToken.objects.get(pk=recent.pk).last_used_at == recent.last_used_at


def test_bulk__impact_metrics__accepted_and_ignored(flags):
    impact = [{"name": "checkout_latency", "help": "ms", "type": "counter", "samples": []}]

    response = post(edge(), batch(metrics=[metric("checkout", 1, 0)], impactMetrics=impact))

    assert response.status_code == 202
    assert buckets() == [("checkout", "development", "checkout", 1, 0)]


def test_bulk__count_as_numeric_string__taken_as_unleash_takes_it(flags):
    response = post(edge(), batch(metrics=[metric("checkout", "2", 0)]))

    assert response.status_code == 202
    assert buckets() == [("checkout", "development", "checkout", 2, 0)]


def test_bulk__largest_counts__summed_without_overflow(flags):
    body = batch(metrics=[metric("checkout", MAX_BULK_COUNT, 0)] * 3)

    assert post(edge(), body).status_code == 202

    assert buckets() == [("checkout", "development", "checkout", 3 * MAX_BULK_COUNT, 0)]


def test_bulk__full_batch__bounded_queries(flags, django_assert_max_num_queries):
    apps = [f"app-{n}" for n in range(20)]
    body = batch(
        [registration(app, f"{app}-1") for app in apps],
        [metric(flag, 1, 1, app=app) for app in apps for flag in flags],
    )
    assert len(json.dumps(body)) < 100 * 1024
    client = edge()

    # Token lookup, the instances' upsert, one bucket upsert per app, the last-seen writes.
    with django_assert_max_num_queries(40):
        response = post(client, body)

    assert response.status_code == 202
    assert FeatureUsageBucket.objects.count() == 40
    assert ClientInstance.objects.count() == 20


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        pytest.param(
            {"metrics": []},
            "/body/applications",
            "The `/body/applications` property is required. It was not present on the data "
            "you sent.",
            id="no-applications",
        ),
        pytest.param(
            {"applications": []},
            "/body/metrics",
            "The `/body/metrics` property is required. It was not present on the data you sent.",
            id="no-metrics",
        ),
        pytest.param(
            {"applications": {}, "metrics": []},
            "/body/applications",
            "The `/body/applications` property must be array. You sent {}.",
            id="applications-object",
        ),
        pytest.param(
            [], "/body", "The `/body` property must be object. You sent [].", id="body-list"
        ),
        pytest.param(
            batch(metrics=[1]),
            "/body/metrics/0",
            "The `/body/metrics/0` property must be object. You sent 1.",
            id="metric-not-object",
        ),
        pytest.param(
            batch(metrics=[metric("checkout", -1, 0)]),
            "/body/metrics/0/yes",
            "The `/body/metrics/0/yes` property must be >= 0. You sent -1.",
            id="negative",
        ),
        pytest.param(
            batch(metrics=[metric("checkout", 1.5, 0)]),
            "/body/metrics/0/yes",
            "The `/body/metrics/0/yes` property must be integer. You sent 1.5.",
            id="fraction",
        ),
        pytest.param(
            batch(metrics=[metric("checkout", 0, MAX_BULK_COUNT + 1)]),
            "/body/metrics/0/no",
            f"The `/body/metrics/0/no` property must be <= {MAX_BULK_COUNT}. "
            f"You sent {MAX_BULK_COUNT + 1}.",
            id="past-u32",
        ),
        pytest.param(
            batch(metrics=[metric("checkout", 1, 0, variants={"blue": -1})]),
            "/body/metrics/0/variants/blue",
            "The `/body/metrics/0/variants/blue` property must be >= 0. You sent -1.",
            id="variant-negative",
        ),
        pytest.param(
            batch(metrics=[{"featureName": "checkout", "appName": "a", "yes": 1}]),
            "/body/metrics/0/environment",
            "The `/body/metrics/0/environment` property is required. It was not present on the "
            "data you sent.",
            id="metric-no-environment",
        ),
        pytest.param(
            batch([registration(instanceId=None)]),
            "/body/applications/0/instanceId",
            "The `/body/applications/0/instanceId` property must be string. You sent null.",
            id="instance-null",
        ),
        pytest.param(
            batch([{"appName": "a", "environment": "development"}]),
            "/body/applications/0/instanceId",
            "The `/body/applications/0/instanceId` property is required. It was not present on "
            "the data you sent.",
            id="no-instance",
        ),
        pytest.param(
            batch([registration(sdkType="mobile")]),
            "/body/applications/0/sdkType",
            "The `/body/applications/0/sdkType` property must be equal to one of the allowed "
            'values: "frontend", "backend". You sent "mobile".',
            id="sdk-type",
        ),
        pytest.param(
            batch([registration(appName="a" * 256)]),
            "/body/applications/0/appName",
            "The `/body/applications/0/appName` property must NOT have more than 255 "
            f'characters. You sent "{"a" * 256}".',
            id="app-name-too-long",
        ),
        pytest.param(
            batch([registration(interval="10")]),
            "/body/applications/0/interval",
            'The `/body/applications/0/interval` property must be a number >= 0. You sent "10".',
            id="interval-string",
        ),
        pytest.param(
            batch([registration(strategies=["default", 3])]),
            "/body/applications/0/strategies/1",
            "The `/body/applications/0/strategies/1` property must be string. You sent 3.",
            id="strategy-not-string",
        ),
        pytest.param(
            batch(seenTokens=[5]),
            "/body/seenTokens/0",
            "The `/body/seenTokens/0` property must be string. You sent 5.",
            id="seen-token-not-string",
        ),
        pytest.param(
            batch(impactMetrics=5),
            "/body/impactMetrics",
            "The `/body/impactMetrics` property must be array. You sent 5.",
            id="impact-not-list",
        ),
    ],
)
def test_bulk__invalid__400_nothing_recorded(flags, body, path, message):
    if isinstance(body, dict) and body.get("metrics"):
        body = {**body, "metrics": [*body["metrics"], metric("checkout", 1, 0)]}

    error = assert_error(post(edge(), body), 400, "ValidationError")

    assert error["details"] == [{"path": path, "message": message}]
    assert not FeatureUsageBucket.objects.exists()
    assert not ClientInstance.objects.exists()


def test_bulk__empty_batch__202(db):
    assert post(edge(), batch()).status_code == 202


def test_bulk__anonymous__401(anon_client):
    assert_error(post(anon_client, batch()), 401, "AuthenticationRequired")


@pytest.mark.parametrize("token_type", [TokenType.ADMIN, TokenType.PERSONAL, TokenType.FRONTEND])
def test_bulk__not_a_client_token__403(db, token_type):
    client = APIClient()
    user = UserFactory() if token_type == TokenType.PERSONAL else None
    client.credentials(HTTP_AUTHORIZATION=make_token(token_type, user=user)[1])

    error = assert_error(post(client, batch()), 403, "NoAccessError")
    assert error["message"] == "invalid token: expected a different token type for this endpoint"


def test_bulk__not_json__415(db):
    response = edge().post(BULK, "applications", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


def test_bulk__over_100_kib__413(db):
    body = batch(metrics=[metric("x" * 200, 1, 0)] * 500)

    assert_error(post(edge(), body), 413, "ContentTooLargeError")
