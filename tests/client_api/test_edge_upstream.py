"""Unleash Edge with flagadmin as its upstream, request by request. Edge is a Rust binary that
cannot be installed here, so each test sends exactly what Edge's upstream client sends
(unleash-edge: crates/oss/unleash-edge-http-client/src/lib.rs, the bodies as serde writes
unleash-types' structs) and reads the answer as Edge reads it."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from features.models import ClientInstance, FeatureUsageBucket
from flagadmin.core.models import TokenType
from tests.factories import make_token

# Edge's reqwest client: these on every request, plus the token where one is sent.
EDGE_HEADERS = {
    "HTTP_USER_AGENT": "unleash-edge-19.10.0",
    "HTTP_UNLEASH_APPNAME": "unleash-edge",
    "HTTP_UNLEASH_INSTANCEID": "01JDRX3V8Q2N6F5B7C9D0E1F2G",
    "HTTP_UNLEASH_CONNECTION_ID": "4f9a3c2e-8b7d-4e6f-a1b2-c3d4e5f60718",
    "HTTP_UNLEASH_CLIENT_SPEC": "5.2.2",
}
# unleash_edge_types::TokenType: the names (and aliases) its Deserialize accepts. Any other
# `type` fails the whole answer.
EDGE_TOKEN_TYPES = {"frontend", "backend", "admin", "invalid", "FRONTEND", "CLIENT", "client"}
EDGE_TOKEN_TYPES |= {"BACKEND", "ADMIN"}


def edge_tokens(body: dict) -> list[dict]:
    """The answer of /edge/validate read as Edge's `EdgeTokens` struct reads it."""
    tokens = body["tokens"]
    assert isinstance(tokens, list)
    for token in tokens:
        assert isinstance(token["token"], str)
        assert token.get("type") is None or token["type"] in EDGE_TOKEN_TYPES
        assert token.get("environment") is None or isinstance(token["environment"], str)
        assert all(isinstance(project, str) for project in token["projects"])
    return tokens


def edge_client(token: str | None = None) -> APIClient:
    client = APIClient()
    credentials = {"HTTP_AUTHORIZATION": token} if token else {}
    client.credentials(**EDGE_HEADERS, **credentials)
    return client


def post(client: APIClient, url: str, body: dict):
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def client_token(db) -> str:
    return make_token(TokenType.CLIENT, projects=["default"], environment="development")[1]


@pytest.fixture
def flag(admin_client) -> str:
    features = "/api/admin/projects/default/features"
    assert post(admin_client, features, {"name": "edge-checkout"}).status_code == 201
    environment = f"{features}/edge-checkout/environments/development"
    assert post(admin_client, f"{environment}/on", {}).status_code == 200
    return "edge-checkout"


def test_edge_startup__validate_register_fetch(client_token, flag):
    # 1. An SDK presents its token to Edge: Edge asks upstream whether it is valid, unsigned.
    validated = post(edge_client(), "/edge/validate", {"tokens": [client_token, "nope"]})
    assert validated.status_code == 200
    assert edge_tokens(validated.json()) == [
        {
            "token": client_token,
            "type": "client",
            "projects": ["default"],
            "environment": "development",
        }
    ]

    # 2. Edge registers itself with the token (client_application_from_token_and_name).
    upstream = edge_client(client_token)
    registration = {
        "appName": "unleash-edge",
        "connectVia": None,
        "environment": "development",
        "projects": ["default"],
        "instanceId": "01JDRX3V8Q2N6F5B7C9D0E1F2G",
        "connectionId": "4f9a3c2e-8b7d-4e6f-a1b2-c3d4e5f60718",
        "interval": 10,
        "started": "2026-11-28T09:12:44.512345Z",
        "strategies": [],
        "sdkVersion": "unleash-edge:19.10.0",
        "sdkType": "backend",
        "yggdrasilVersion": None,
        "platformName": None,
        "platformVersion": None,
        "sdkFlavor": None,
        "sdkFlavorVersion": None,
    }
    assert post(upstream, "/api/client/register", registration).status_code == 202
    assert ClientInstance.objects.get().sdk_version == "unleash-edge:19.10.0"

    # 3. Edge polls the flags with the token, then revalidates with the ETag it was given.
    features = upstream.get("/api/client/features", HTTP_UNLEASH_INTERVAL="10000")
    assert features.status_code == 200
    assert [f["name"] for f in features.json()["features"]] == [flag]
    again = upstream.get(
        "/api/client/features",
        HTTP_IF_NONE_MATCH=features["ETag"],
        HTTP_UNLEASH_INTERVAL="10000",
    )
    assert again.status_code == 304


def test_edge_metrics__one_batch_per_environment(client_token, flag):
    production = make_token(TokenType.CLIENT, projects=["default"], environment="production")[1]
    sdk = {
        "appName": "checkout",
        "connectVia": [{"appName": "unleash-edge", "instanceId": "01JDRX3V8Q2N6F5B7C9D0E1F2G"}],
        "instanceId": "checkout-7d9f",
        "connectionId": None,
        "interval": 15000,
        "started": "2026-11-28T09:00:01Z",
        "strategies": ["default"],
        "sdkVersion": "unleash-client-node:6.12.1",
        "sdkType": "backend",
        "yggdrasilVersion": None,
        "platformName": "node",
        "platformVersion": "20.19.2",
    }

    def metrics(environment: str, yes: int) -> dict:
        return {
            "featureName": flag,
            "appName": "checkout",
            "environment": environment,
            "timestamp": "2026-11-28T09:00:00Z",
            "yes": yes,
            "no": 1,
            "variants": {},
            "sdkVersion": "unleash-client-node:6.12.1",
            "sdkType": "backend",
            "yggdrasilVersion": None,
            "platformName": None,
            "platformVersion": None,
        }

    for token, environment, yes in [
        (client_token, "development", 3),
        (production, "production", 8),
    ]:
        body = {
            "applications": [{**sdk, "environment": environment}],
            "metrics": [metrics(environment, yes)],
            "seenTokens": [token],
        }
        assert post(edge_client(token), "/api/client/metrics/bulk", body).status_code == 202

    counts = FeatureUsageBucket.objects.order_by("environment").values_list(
        "environment", "app_name", "yes", "no"
    )
    assert list(counts) == [("development", "checkout", 3, 1), ("production", "checkout", 8, 1)]
    assert ClientInstance.objects.filter(app_name="checkout").count() == 2


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("post", "/api/client/metrics/edge", id="instance-data"),
        pytest.param("get", "/api/client/delta", id="delta"),
        pytest.param("get", "/api/client/streaming", id="streaming"),
    ],
)
def test_edge_optional_endpoints__404_as_on_unleash_oss(client_token, method, path):
    """Edge's observability data, delta polling (opt-in) and streaming (opt-in): Unleash 8.2's
    open-source server answers 404, so does flagadmin, and Edge carries on without them."""
    client = edge_client(client_token)
    response = post(client, path, {}) if method == "post" else client.get(path)

    assert response.status_code == 404
    assert response.json()["name"] == "NotFoundError"


@pytest.mark.parametrize(
    ("url", "body"),
    [
        pytest.param(
            "/api/client/register",
            {"appName": "shop", "interval": 10, "started": 1, "strategies": []},
            id="register",
        ),
        pytest.param("/api/client/metrics", {"appName": "shop"}, id="metrics"),
    ],
)
def test_sdk_optional_fields_null__202_as_on_unleash(client_token, url, body):
    """Rust clients (Edge, unleash-types) write every unset optional field as `null`; Unleash
    takes `null` for each of these (`instanceId` becomes `default`)."""
    nulls = dict.fromkeys(
        ["instanceId", "environment", "platformName", "platformVersion", "yggdrasilVersion"]
    )
    if url.endswith("register"):
        nulls["specVersion"] = None

    response = post(edge_client(client_token), url, {**body, **nulls})

    assert response.status_code == 202
    if url.endswith("register"):
        assert ClientInstance.objects.get().instance_id == "default"
