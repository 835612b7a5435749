"""For 1,000 random contexts, /api/frontend answers what the Python SDK (`UnleashClient`),
evaluating the client payload it fetched from the same server, answers: the same flags on, each
with the same variant (name, enabled, payload). Zero differences, over the flag shapes of the
client API's and the SDK tests: every rollout stickiness, each constraint operator with
`inverted` and `caseInsensitive`, segments, strategy variants with payloads and stickiness,
environment variants, dependencies (with a parent's variant), several strategies, a paused one,
the remoteAddress strategy, and flags off.

Every context carries a `sessionId` (Unleash draws a random one when there is none, which the
SDK would not share) and the SDK's `appName` and `environment`, which an SDK adds to every
context itself."""

from __future__ import annotations

import json
import random
from pathlib import Path
from urllib.parse import urlencode

import pytest
from rest_framework.test import APIClient

from evaluation.engine import clear_engines
from features.models import FeatureEnvironment
from flagadmin.core.models import TokenType
from frontend_api.authentication import forget_tokens
from tests.factories import make_token

pytestmark = [
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

CONTEXTS = 1_000
SEED = 26
APP_NAME = "flagadmin-frontend-agreement"
FEATURES = "/api/admin/projects/default/features"


def rollout(percent: int, stickiness: str = "default", group: str = "g") -> dict:
    return {
        "name": "flexibleRollout",
        "parameters": {"rollout": str(percent), "stickiness": stickiness, "groupId": group},
    }


def constrained(*constraints: dict, percent: int = 100) -> dict:
    return {**rollout(percent), "constraints": list(constraints)}


def constraint(field: str, operator: str, *values: str, **flags) -> dict:
    found = {"contextName": field, "operator": operator, **flags}
    if operator in ("IN", "NOT_IN") or operator.startswith("STR_"):
        found["values"] = list(values)
    else:
        found["value"] = values[0]
    return found


def variant(name: str, weight: int = 0, **more) -> dict:
    return {"name": name, "weight": weight, "weightType": "variable", **more}


PAYLOADS = [
    variant("red", stickiness="userId", payload={"type": "string", "value": "red"}),
    variant("green", stickiness="userId", payload={"type": "json", "value": '{"g": 1}'}),
    variant("blue", stickiness="userId"),
]

# name: (strategies, on)
SHAPES: dict[str, tuple[list[dict], bool]] = {
    "s-default": ([{"name": "default"}], True),
    "s-off": ([rollout(100)], False),
    "s-rollout-50-default": ([rollout(50, group="half")], True),
    "s-rollout-30-user": ([rollout(30, "userId", "users")], True),
    "s-rollout-70-session": ([rollout(70, "sessionId", "sessions")], True),
    "s-rollout-40-tier": ([rollout(40, "tier", "tiers")], True),
    "s-rollout-0": ([rollout(0)], True),
    "s-in-country": ([constrained(constraint("country", "IN", "no", "se"))], True),
    "s-not-in-country": ([constrained(constraint("country", "NOT_IN", "no"))], True),
    "s-in-country-inverted": (
        [constrained(constraint("country", "IN", "dk", inverted=True))],
        True,
    ),
    "s-str-contains-ci": (
        [constrained(constraint("userId", "STR_CONTAINS", "A", caseInsensitive=True))],
        True,
    ),
    "s-str-starts": ([constrained(constraint("userId", "STR_STARTS_WITH", "user-1"))], True),
    "s-str-ends-inverted": (
        [constrained(constraint("email", "STR_ENDS_WITH", "@example.com", inverted=True))],
        True,
    ),
    "s-num-gt": ([constrained(constraint("age", "NUM_GT", "30"))], True),
    "s-num-lte": ([constrained(constraint("age", "NUM_LTE", "18"))], True),
    "s-num-eq": ([constrained(constraint("age", "NUM_EQ", "42"))], True),
    "s-semver-gt": ([constrained(constraint("version", "SEMVER_GT", "1.2.0"))], True),
    "s-semver-eq": ([constrained(constraint("version", "SEMVER_EQ", "2.0.0-beta.1"))], True),
    "s-semver-lt-inverted": (
        [constrained(constraint("version", "SEMVER_LT", "1.10.0", inverted=True))],
        True,
    ),
    "s-date-after-past": (
        [constrained(constraint("currentTime", "DATE_AFTER", "2020-01-01T00:00:00.000Z"))],
        True,
    ),
    "s-date-before-past": (
        [constrained(constraint("currentTime", "DATE_BEFORE", "2020-01-01T00:00:00.000Z"))],
        True,
    ),
    "s-remote-address": (
        [{"name": "remoteAddress", "parameters": {"IPs": "10.0.0.1, 192.168.0.0/24"}}],
        True,
    ),
    "s-two-strategies": (
        [constrained(constraint("tier", "IN", "gold")), rollout(25, "userId", "two")],
        True,
    ),
    "s-paused-and-rollout": (
        [{**constrained(constraint("country", "IN", "no")), "disabled": True}, rollout(60)],
        True,
    ),
    "s-variants": ([{**rollout(100), "variants": PAYLOADS}], True),
    "s-variants-constrained": (
        [{**constrained(constraint("country", "IN", "se", "dk")), "variants": PAYLOADS}],
        True,
    ),
    "s-variants-sticky-tier": (
        [
            {
                **rollout(80, "tier", "vt"),
                "variants": [
                    variant("a", stickiness="tier"),
                    variant("b", stickiness="tier"),
                ],
            }
        ],
        True,
    ),
    "s-segment": ([{**rollout(100), "segments": ["beta"]}], True),
    "s-environment-variants": ([rollout(100)], True),
    "s-parent": ([{**rollout(50, "userId", "parent"), "variants": PAYLOADS}], True),
    "s-child": ([rollout(100)], True),
    "s-child-of-variant": ([rollout(100)], True),
    "s-child-of-off": ([rollout(100)], True),
    "s-impression": ([rollout(100)], True),
}


def _call(client: APIClient, method: str, url: str, body: dict | None = None) -> dict | None:
    response = getattr(client, method)(url, json.dumps(body or {}), content_type="application/json")
    assert response.status_code in (200, 201), (url, response.content)
    return response.json() if response.content else None


def make_flags(admin: APIClient) -> None:
    segment = _call(
        admin,
        "post",
        "/api/admin/segments",
        {"name": "beta", "constraints": [constraint("tier", "IN", "gold", "silver")]},
    )
    for name, (strategies, on) in SHAPES.items():
        _call(admin, "post", FEATURES, {"name": name, "impressionData": name == "s-impression"})
        base = f"{FEATURES}/{name}/environments/development"
        for strategy in strategies:
            if "segments" in strategy:
                strategy = {**strategy, "segments": [segment["id"]]}
            _call(admin, "post", f"{base}/strategies", strategy)
        if on:
            _call(admin, "post", f"{base}/on")
    FeatureEnvironment.objects.filter(
        feature_id="s-environment-variants", environment_id="development"
    ).update(
        variants=[
            {**item, "weight": weight, "stickiness": "default"}
            for item, weight in zip(PAYLOADS, (500, 300, 200), strict=True)
        ]
    )
    dependencies = {
        "s-child": {"feature": "s-parent"},
        "s-child-of-variant": {"feature": "s-parent", "variants": ["green"]},
        "s-child-of-off": {"feature": "s-off"},
    }
    for child, dependency in dependencies.items():
        _call(admin, "post", f"{FEATURES}/{child}/dependencies", dependency)


def random_context(rng: random.Random) -> dict:
    """A context as an SDK takes it; each field present or not, values that hit the rules."""
    properties = {}
    choices = {
        "country": ["no", "se", "dk", "NO", "fi"],
        "tier": ["gold", "silver", "bronze", "Gold"],
        "age": ["17", "18", "30", "31", "42", "42.0", "x"],
        "version": ["1.2.0", "1.2.1", "1.10.0", "1.9.9", "2.0.0-beta.1", "2.0.0", "bad"],
        "email": ["a@example.com", "b@example.org", "c@EXAMPLE.COM"],
    }
    for field, values in choices.items():
        if rng.random() < 0.7:
            properties[field] = rng.choice(values)
    context = {
        "sessionId": f"session-{rng.randrange(10**6)}",
        "remoteAddress": rng.choice(["10.0.0.1", "10.0.0.2", "192.168.0.77", "192.168.1.1"]),
        "properties": properties,
    }
    if rng.random() < 0.85:
        context["userId"] = rng.choice(
            [f"user-{rng.randrange(300)}", f"Alice-{rng.randrange(50)}", f"bob{rng.randrange(9)}"]
        )
    return context


def python_sdk_answers(server: str, token: str, contexts: list[dict], tmp_path: Path) -> list:
    from UnleashClient import UnleashClient
    from UnleashClient.utils import InstanceAllowType

    client = UnleashClient(
        url=f"{server}/api",
        app_name=APP_NAME,
        environment="default",
        custom_headers={"Authorization": token},
        refresh_interval=600,
        disable_metrics=True,
        disable_registration=True,
        cache_directory=str(tmp_path / "unleash-cache"),
        multiple_instance_mode=InstanceAllowType.SILENTLY_ALLOW,
    )
    client.initialize_client()
    try:
        answers = []
        for context in contexts:
            enabled = {}
            for name in SHAPES:
                # The variant says whether the flag is on (`feature_enabled`), as `is_enabled`.
                found = client.get_variant(name, context)
                if found["feature_enabled"]:
                    enabled[name] = {
                        "name": found["name"],
                        "enabled": found["enabled"],
                        **({"payload": found["payload"]} if "payload" in found else {}),
                    }
            answers.append(enabled)
        return answers
    finally:
        client.destroy()


def frontend_answers(token: str, contexts: list[dict]) -> list:
    browser = APIClient()
    browser.credentials(HTTP_AUTHORIZATION=token)
    answers = []
    for number, context in enumerate(contexts):
        sent = {**context, "appName": APP_NAME, "environment": "default"}
        if number % 2:
            response = browser.post(
                "/api/frontend", json.dumps({"context": sent}), content_type="application/json"
            )
        else:
            query = {key: value for key, value in sent.items() if key != "properties"}
            query.update({f"properties[{k}]": v for k, v in sent["properties"].items()})
            response = browser.get(f"/api/frontend?{urlencode(query)}")
        assert response.status_code == 200, response.content
        answers.append(
            {
                toggle["name"]: {
                    key: toggle["variant"][key]
                    for key in ("name", "enabled", "payload")
                    if key in toggle["variant"]
                }
                for toggle in response.json()["toggles"]
            }
        )
    return answers


def test_frontend__agrees_with_the_python_sdk_over_random_contexts(live_server, tmp_path):
    forget_tokens()
    clear_engines()
    admin = APIClient()
    admin.credentials(HTTP_AUTHORIZATION=make_token(TokenType.ADMIN)[1])
    make_flags(admin)
    rng = random.Random(SEED)
    contexts = [random_context(rng) for _ in range(CONTEXTS)]
    client_token = make_token(TokenType.CLIENT, projects=["*"], environment="development")[1]
    frontend_token = make_token(TokenType.FRONTEND, projects=["*"], environment="development")[1]

    expected = python_sdk_answers(live_server.url, client_token, contexts, tmp_path)
    answered = frontend_answers(frontend_token, contexts)
    # The same contexts again, each with a property no rule reads: answered from what was
    # kept for the first ones (the rules read the same values), so those must be right too.
    noisy = [
        {**context, "properties": {**context["properties"], "noise": str(rng.random())}}
        for context in contexts
    ]
    answered_again = frontend_answers(frontend_token, noisy)

    differences = [
        (context, sdk, frontend, again)
        for context, sdk, frontend, again in zip(
            contexts, expected, answered, answered_again, strict=True
        )
        if not sdk == frontend == again
    ]
    assert differences == []
    # The contexts reach every shape both ways: each flag on for some and off for others
    # (those whose rules admit everyone or no one aside).
    on_counts = {name: sum(name in answer for answer in answered) for name in SHAPES}
    always = {"s-default", "s-date-after-past", "s-impression", "s-environment-variants"}
    always |= {"s-variants"}
    never = {"s-off", "s-rollout-0", "s-date-before-past", "s-child-of-off"}
    assert {name for name, count in on_counts.items() if count == CONTEXTS} == always
    assert {name for name, count in on_counts.items() if count == 0} == never
