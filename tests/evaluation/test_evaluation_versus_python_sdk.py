"""For 1,000 random contexts, `evaluation.engine.decide_all` decides every flag as the Python SDK
(`UnleashClient`) decides it from the client payload it fetched from the live server: the same
`isEnabled` and the same variant (name, enabled, payload, feature_enabled), for every flag, on
or off. Zero differences, over the flag shapes of the client API's and the SDK tests: rollouts
of each stickiness, every constraint operator with `inverted` and `caseInsensitive`, segments,
strategy variants (payloads, weights, stickiness), environment variants with overrides,
several strategies in a set order, a paused one, remoteAddress, dependencies (on a parent on,
off, on a parent's variant, on a parent being off), impression data, another project, flags
off.

Each context is given to both as an SDK is given it; `decide_all` also gets what the SDK adds
to every context itself (its `appName`, and `environment` `default`). Every context has a
`userId` or a `sessionId`: without either, a rollout on default stickiness is a random draw."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from evaluation.engine import clear_engines, decide_all
from features.models import FeatureEnvironment, Segment
from flagadmin.core.models import TokenType
from tests.factories import ProjectFactory, make_token

pytestmark = [
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

CONTEXTS = 1_000
APP_NAME = "flagadmin-evaluation-agreement"


def rollout(percent: int, stickiness: str = "default", **more) -> dict:
    parameters = {"rollout": str(percent), "stickiness": stickiness}
    return {"name": "flexibleRollout", "parameters": parameters, **more}


def where(*constraints: dict, **more) -> dict:
    return {"name": "default", "constraints": list(constraints), **more}


def constraint(field: str, operator: str, *values: str, **options) -> dict:
    listed = operator in ("IN", "NOT_IN") or operator.startswith("STR_")
    key = {"values": list(values)} if listed else {"value": values[0]}
    return {"contextName": field, "operator": operator, **key, **options}


def variant(name: str, weight: int = 0, stickiness: str = "default", **more) -> dict:
    return {
        "name": name,
        "weight": weight,
        "weightType": "variable",
        "stickiness": stickiness,
        **more,
    }


COLOURS = [
    variant("red", payload={"type": "string", "value": "r"}),
    variant("green", payload={"type": "json", "value": '{"g": 1}'}),
    variant("blue"),
]
TIERED = [variant("gold", stickiness="tier"), variant("silver", stickiness="tier")]
FIXED = [variant("fixed", 300, weightType="fix"), variant("rest-a"), variant("rest-b")]

# name: (strategies, on); strategies get `sortOrder` in their order.
SHAPES: dict[str, tuple[list[dict], bool]] = {
    "on-default": ([{"name": "default"}], True),
    "on-without-strategies": ([], True),
    "off-with-strategy": ([{"name": "default"}], False),
    "rollout-0": ([rollout(0)], True),
    "rollout-45-default": ([rollout(45)], True),
    "rollout-30-user": ([rollout(30, "userId")], True),
    "rollout-60-session": ([rollout(60, "sessionId")], True),
    "rollout-50-tier": ([rollout(50, "tier")], True),
    "rollout-100-random": ([rollout(100, "random")], True),
    "remote-address": (
        [{"name": "remoteAddress", "parameters": {"IPs": "10.0.0.1, 192.168.0.0/16"}}],
        True,
    ),
    "in": ([where(constraint("country", "IN", "no", "se"))], True),
    "in-inverted": ([where(constraint("country", "IN", "no", inverted=True))], True),
    "in-case-insensitive": ([where(constraint("country", "IN", "no", caseInsensitive=True))], True),
    "not-in-app": ([where(constraint("appName", "NOT_IN", "legacy"))], True),
    "starts-with-ci": (
        [where(constraint("email", "STR_STARTS_WITH", "ANN", caseInsensitive=True))],
        True,
    ),
    "ends-with": ([where(constraint("email", "STR_ENDS_WITH", ".no", ".org"))], True),
    "contains-inverted": (
        [where(constraint("email", "STR_CONTAINS", "example", inverted=True))],
        True,
    ),
    "num-eq": ([where(constraint("age", "NUM_EQ", "18"))], True),
    "num-gt": ([where(constraint("age", "NUM_GT", "18"))], True),
    "num-gte-inverted": ([where(constraint("age", "NUM_GTE", "65.5", inverted=True))], True),
    "num-lt": ([where(constraint("age", "NUM_LT", "30"))], True),
    "num-lte": ([where(constraint("age", "NUM_LTE", "18.0"))], True),
    "date-after": (
        [where(constraint("currentTime", "DATE_AFTER", "2025-06-01T00:00:00.000Z"))],
        True,
    ),
    "date-before": (
        [where(constraint("currentTime", "DATE_BEFORE", "2024-01-01T12:00:00.000Z"))],
        True,
    ),
    "semver-eq": ([where(constraint("version", "SEMVER_EQ", "1.2.3"))], True),
    "semver-gt": ([where(constraint("version", "SEMVER_GT", "1.2.3"))], True),
    "semver-lt-pre": ([where(constraint("version", "SEMVER_LT", "2.0.0-beta.2"))], True),
    "regex": ([where(constraint("userId", "REGEX", "^user-[0-9]*7$"))], True),
    "regex-ci": (
        [where(constraint("email", "REGEX", "^[a-z]+@EXAMPLE\\.(com|no)$", caseInsensitive=True))],
        True,
    ),
    "two-constraints": (
        [where(constraint("appName", "IN", "web", "ios"), constraint("age", "NUM_GTE", "18"))],
        True,
    ),
    "strategy-variants": ([rollout(100, variants=COLOURS)], True),
    "strategy-variants-tier": ([rollout(100, "tier", variants=TIERED)], True),
    "strategy-variants-fixed": ([rollout(100, "userId", variants=FIXED)], True),
    "sorted-strategies": (
        [
            where(constraint("country", "IN", "no"), variants=[variant("norway", 1000)]),
            rollout(50, "userId", variants=[variant("half", 1000)]),
            {"name": "default", "variants": [variant("rest", 1000)]},
        ],
        True,
    ),
    "paused-and-live": ([{"name": "default", "disabled": True}, rollout(25, "userId")], True),
    "impression-data": ([{"name": "default"}], True),
}
ENVIRONMENT_VARIANTS = [
    {
        "name": "dark",
        "weight": 500,
        "weightType": "variable",
        "stickiness": "default",
        "payload": {"type": "string", "value": "dark"},
        "overrides": [{"contextName": "userId", "values": ["user-7"]}],
    },
    {"name": "light", "weight": 500, "weightType": "variable", "stickiness": "default"},
]


def post(client: APIClient, url: str, body=None) -> dict:
    response = client.post(url, json.dumps(body or {}), content_type="application/json")
    assert response.status_code in (200, 201), (url, response.content)
    return response.json() if response.content else {}


def make_flag(admin: APIClient, name: str, strategies: list[dict], on: bool, project="default"):
    features = f"/api/admin/projects/{project}/features"
    post(admin, features, {"name": name, "impressionData": name == "impression-data"})
    for order, strategy in enumerate(strategies):
        strategy = {**strategy, "sortOrder": order}
        post(admin, f"{features}/{name}/environments/development/strategies", strategy)
    if on:
        post(admin, f"{features}/{name}/environments/development/on")


@pytest.fixture
def flags(db) -> list[str]:
    admin = APIClient()
    admin.credentials(HTTP_AUTHORIZATION=make_token(TokenType.ADMIN)[1])
    for name, (strategies, on) in SHAPES.items():
        make_flag(admin, name, strategies, on)
    segment = Segment.objects.create(
        name="adults-in-europe",
        constraints=[
            constraint("age", "NUM_GTE", "18"),
            constraint("region", "IN", "eu"),
        ],
    )
    make_flag(admin, "segment", [{"name": "default", "segments": [segment.pk]}], True)
    make_flag(admin, "environment-variants", [{"name": "default"}], True)
    FeatureEnvironment.objects.filter(
        feature_id="environment-variants", environment_id="development"
    ).update(variants=ENVIRONMENT_VARIANTS)
    dependencies = "/api/admin/projects/default/features/{}/dependencies"
    for child, parent in [
        ("child-of-on", {"feature": "on-default"}),
        ("child-of-off", {"feature": "off-with-strategy"}),
        ("child-of-a-variant", {"feature": "strategy-variants", "variants": ["red"]}),
        ("child-of-parent-off", {"feature": "off-with-strategy", "enabled": False}),
        ("child-of-a-rollout", {"feature": "rollout-30-user"}),
    ]:
        make_flag(admin, child, [{"name": "default"}], True)
        post(admin, dependencies.format(child), parent)
    ProjectFactory(id="other")
    make_flag(admin, "elsewhere", [rollout(50, "userId")], True, project="other")
    # A write that records an event: the live server's payload is built after every flag.
    post(admin, "/api/admin/projects/default/features", {"name": "last"})
    clear_engines()
    return [
        *SHAPES,
        "segment",
        "environment-variants",
        "child-of-on",
        "child-of-off",
        "child-of-a-variant",
        "child-of-parent-off",
        "child-of-a-rollout",
        "elsewhere",
        "last",
    ]


def contexts(count: int, seed: int = 26) -> list[dict]:
    draw = random.Random(seed)
    found = []
    for index in range(count):
        context: dict = {}
        identity = index % 3
        if identity != 1:
            context["userId"] = draw.choice(
                [f"user-{draw.randrange(100)}", "alice", str(draw.randrange(999))]
            )
        if identity != 0:
            context["sessionId"] = f"s-{draw.randrange(60)}"
        for key, pool in (
            ("appName", ["web", "ios", "legacy", None]),
            ("remoteAddress", ["10.0.0.1", "192.168.4.2", "172.16.0.9", None]),
            ("currentTime", ["2023-05-01T10:00:00.000Z", "2025-07-01T00:00:00.000Z", None]),
        ):
            value = draw.choice(pool)
            if value is not None:
                context[key] = value
        properties = {}
        for key, pool in (
            ("country", ["no", "NO", "se", "us", None]),
            ("email", ["ann@example.com", "Ann@EXAMPLE.no", "bob@mail.org", None]),
            ("age", ["17", "18", "18.0", "30", "65.5", "x", None]),
            ("version", ["1.2.3", "1.2.4", "2.0.0-beta.1", "2.0.0", "x", None]),
            ("tier", [f"t{n}" for n in range(10)] + [None]),
            ("region", ["eu", "us", None]),
        ):
            value = draw.choice(pool)
            if value is not None:
                properties[key] = value
        if properties:
            context["properties"] = properties
        found.append(context)
    return found


@pytest.fixture
def python_sdk(live_server, tmp_path: Path, flags):
    from UnleashClient import UnleashClient
    from UnleashClient.utils import InstanceAllowType

    token = make_token(TokenType.CLIENT, projects=["*"], environment="development")[1]
    client = UnleashClient(
        url=f"{live_server.url}/api",
        app_name=APP_NAME,
        custom_headers={"Authorization": token},
        refresh_interval=3600,
        metrics_interval=3600,
        disable_metrics=True,
        disable_registration=True,
        cache_directory=str(tmp_path / "unleash-cache"),
        multiple_instance_mode=InstanceAllowType.SILENTLY_ALLOW,
    )
    client.initialize_client()
    yield client
    client.destroy()


# The shapes whose decision no context changes; the contexts turn every other one on and off,
# so that agreeing is not agreeing on a constant.
CONSTANT = {
    "on-default",
    "on-without-strategies",  # turned on with Unleash's default strategy
    "off-with-strategy",
    "rollout-0",
    "rollout-100-random",
    "strategy-variants",
    "sorted-strategies",  # its last strategy is `default`
    "impression-data",
    "environment-variants",
    "child-of-on",
    "child-of-off",
    "child-of-parent-off",
    "last",
}


def test_decide_all__agrees_with_the_python_sdk_for_1000_contexts(python_sdk, flags):
    differences = []
    seen: dict[str, set[bool]] = {name: set() for name in flags}
    variants: dict[str, set[str]] = {name: set() for name in flags}

    for context in contexts(CONTEXTS):
        as_sdk_adds = {**context, "appName": context.get("appName", APP_NAME)}
        ours = {
            decision.name: decision
            for decision in decide_all("development", {**as_sdk_adds, "environment": "default"})
        }
        for name in flags:
            variant = python_sdk.get_variant(name, context)
            theirs = (
                python_sdk.is_enabled(name, context),
                (
                    variant["name"],
                    variant["enabled"],
                    variant.get("payload"),
                    variant["feature_enabled"],
                ),
            )
            decision = ours[name]
            mine = (
                decision.enabled,
                (
                    decision.variant.name,
                    decision.variant.enabled,
                    decision.variant.payload,
                    decision.variant.feature_enabled,
                ),
            )
            if mine != theirs:
                differences.append((name, context, mine, theirs))
            seen[name].add(decision.enabled)
            variants[name].add(decision.variant.name)

    assert differences == []
    assert {name for name, found in seen.items() if len(found) == 1} == CONSTANT
    assert variants["strategy-variants"] == {"red", "green", "blue"}
    assert variants["strategy-variants-tier"] == {"gold", "silver", "disabled"}
    assert variants["strategy-variants-fixed"] == {"fixed", "rest-a", "rest-b", "disabled"}
    assert variants["sorted-strategies"] == {"norway", "half", "rest"}
    assert variants["environment-variants"] == {"dark", "light"}
