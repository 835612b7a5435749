"""evaluation.engine: flags decided by Yggdrasil over the client payload, per environment, kept
per process and refreshed as the client API's payload is (docs/evaluation.md)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from client_api.selectors import ClientFeaturesBody, clear_cache, client_features
from evaluation import engine
from evaluation.engine import (
    DISABLED_VARIANT,
    FlagDecision,
    PayloadEngine,
    VariantDecision,
    decide,
    decide_all,
    sdk_context,
)
from flagadmin.core.caches import named
from flagadmin.core.tokens import current_revision
from tests.factories import ProjectFactory

FEATURES = "/api/admin/projects/default/features"
NORWAY = {"contextName": "country", "operator": "IN", "values": ["no"]}
COLOURS = [
    {
        "name": "blue",
        "weight": 500,
        "weightType": "variable",
        "stickiness": "default",
        "payload": {"type": "string", "value": "sky"},
    },
    {"name": "green", "weight": 500, "weightType": "variable", "stickiness": "default"},
]


@pytest.fixture(autouse=True)
def fresh_engines():
    engine.clear_engines()
    yield
    engine.clear_engines()


def post(client, url: str, body=None):
    response = client.post(url, json.dumps(body or {}), content_type="application/json")
    assert response.status_code in (200, 201), response.content
    return response


def flag(client, name: str, *strategies: dict, project: str = "default", on=True, **extra):
    features = f"/api/admin/projects/{project}/features"
    post(client, features, {"name": name, **extra})
    for strategy in strategies:
        post(client, f"{features}/{name}/environments/development/strategies", strategy)
    if on:
        post(client, f"{features}/{name}/environments/development/on")


@pytest.fixture
def catalogue(admin_client) -> None:
    """`child` (on, its parent `dark` off), `colours` (strategy variants), `dark` (off),
    `everyone` (impression data), `norway` (country IN no); `elsewhere` in project `other`."""
    ProjectFactory(id="other")
    flag(admin_client, "dark", {"name": "default"}, on=False)
    flag(admin_client, "everyone", {"name": "default"}, impressionData=True)
    flag(admin_client, "norway", {"name": "default", "constraints": [NORWAY]})
    flag(
        admin_client,
        "colours",
        {"name": "flexibleRollout", "parameters": {"rollout": "100"}, "variants": COLOURS},
    )
    flag(admin_client, "child", {"name": "default"})
    post(admin_client, f"{FEATURES}/child/dependencies", {"feature": "dark"})
    flag(admin_client, "elsewhere", {"name": "default"}, project="other")


def on(name: str, variant: VariantDecision | None = None, project="default", impression=False):
    variant = variant or VariantDecision("disabled", False, None, True)
    return FlagDecision(name, project, True, variant, impression)


def off(name: str, project="default", impression=False):
    return FlagDecision(name, project, False, DISABLED_VARIANT, impression)


BLUE = VariantDecision("blue", True, {"type": "string", "value": "sky"}, True)
GREEN = VariantDecision("green", True, None, True)


# --- decide_all, decide -----------------------------------------------------------------------


def test_decide_all__every_flag_in_payload_order(catalogue):
    decisions = decide_all("development", {"userId": "u1", "properties": {"country": "no"}})

    assert decisions == [
        off("child"),  # its parent is off: the engine says so
        on("colours", BLUE),
        off("dark"),
        on("elsewhere", project="other"),
        on("everyone", impression=True),
        on("norway"),
    ]


def test_decide_all__context_decides(catalogue):
    decisions = decide_all("development", {"userId": "u4", "properties": {"country": "se"}})

    assert {d.name: d.enabled for d in decisions} == {
        "child": False,
        "colours": True,
        "dark": False,
        "elsewhere": True,
        "everyone": True,
        "norway": False,
    }
    assert decisions[1] == on("colours", GREEN)


def test_decide_all__only_enabled(catalogue):
    decisions = decide_all("development", {"userId": "u1"}, only_enabled=True)

    assert [d.name for d in decisions] == ["colours", "elsewhere", "everyone"]


@pytest.mark.parametrize(
    ("projects", "names"),
    [
        pytest.param(["other"], ["elsewhere"], id="one"),
        pytest.param(
            ["default", "other"],
            ["child", "colours", "dark", "elsewhere", "everyone", "norway"],
            id="two",
        ),
        pytest.param(
            ["*"], ["child", "colours", "dark", "elsewhere", "everyone", "norway"], id="every"
        ),
        pytest.param(["nowhere"], [], id="unknown"),
        pytest.param([], [], id="none"),
    ],
)
def test_decide_all__projects(catalogue, projects, names):
    assert [d.name for d in decide_all("development", {}, projects)] == names


def test_decide_all__environment_of_its_own(catalogue):
    decisions = decide_all("production", {"userId": "u1", "properties": {"country": "no"}})

    assert all(not d.enabled for d in decisions)
    assert len(decisions) == 6


def test_decide__one_flag(catalogue):
    assert decide("development", "colours", {"userId": "u1"}) == on("colours", BLUE)
    assert decide("development", "dark", {"userId": "u1"}) == off("dark")
    assert decide("development", "no-such-flag", {}) is None


def test_decide__archived_flag_is_none(admin_client, catalogue):
    admin_client.delete(f"{FEATURES}/everyone")

    assert decide("development", "everyone", {}) is None


def test_decide_all__a_change_is_seen_by_the_next_call(admin_client, catalogue):
    assert decide("development", "norway", {"properties": {"country": "no"}}).enabled is True

    post(admin_client, f"{FEATURES}/norway/environments/development/off")

    assert decide("development", "norway", {"properties": {"country": "no"}}) == off("norway")


def test_decide_all__revision_given_and_state_current__no_query(
    catalogue, django_assert_num_queries, settings
):
    # On PostgreSQL a body read while any write was in flight on the server (another database's
    # too) is provisional, current for CLIENT_API_REUSE_SECONDS only (0 in tests).
    settings.CLIENT_API_REUSE_SECONDS = 60
    revision = current_revision()
    decide_all("development", {}, revision=revision)

    with django_assert_num_queries(0):
        decisions = decide_all("development", {"userId": "u1"}, revision=revision)

    assert len(decisions) == 6


def test_decide_all__same_flags_rebuilt__same_engine(catalogue):
    first = engine.engine_for("development")
    clear_cache()

    assert engine.engine_for("development") is first  # same ETag: the engine is kept


# --- contexts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param({}, {}, id="empty"),
        pytest.param(
            {"userId": "u", "sessionId": "s", "remoteAddress": "10.0.0.1", "appName": "a"},
            {"userId": "u", "sessionId": "s", "remoteAddress": "10.0.0.1", "appName": "a"},
            id="fields",
        ),
        pytest.param(
            {"tenant": "t1", "properties": {"plan": "pro"}},
            {"properties": {"tenant": "t1", "plan": "pro"}},
            id="other-top-level-fields-are-properties",
        ),
        pytest.param(
            {"tenant": "top", "properties": {"tenant": "inner"}},
            {"properties": {"tenant": "inner"}},
            id="the-property-wins",
        ),
        pytest.param(
            {"userId": 42, "properties": {"age": 18.5, "beta": True, "off": False}},
            {"userId": "42", "properties": {"age": "18.5", "beta": "true", "off": "false"}},
            id="values-as-strings",
        ),
        pytest.param(
            {"userId": None, "properties": {"a": None, "b": ["x"], "c": {"d": 1}}},
            {},
            id="nothing-comparable-left-out",
        ),
        pytest.param({"properties": "not-an-object"}, {}, id="properties-not-an-object"),
    ],
)
def test_sdk_context(given, expected):
    assert sdk_context(given) == expected


def test_decide__top_level_field_is_a_property(catalogue):
    assert decide("development", "norway", {"country": "no"}).enabled is True


# --- one engine per state, one taker at a time ------------------------------------------------


def body_of(features: list[dict], *, etag: str, built_at: float) -> ClientFeaturesBody:
    body = json.dumps({"version": 2, "features": features}).encode()
    return ClientFeaturesBody(
        revision=1, provisional=False, built_at=built_at, etag=etag, body=body
    )


def feature(name: str, enabled: bool = True) -> dict:
    return {
        "name": name,
        "project": "default",
        "enabled": enabled,
        "strategies": [{"name": "default"}],
    }


def test_engine_for__one_taker_at_a_time__others_decide_with_the_current_state(monkeypatch):
    bodies = [body_of([feature("a")], etag='"1"', built_at=1.0)]
    monkeypatch.setattr(engine, "client_features", lambda **_: bodies[-1])
    first = engine.engine_for("development", revision=1)
    taking, release = threading.Event(), threading.Event()
    built = []
    build = PayloadEngine.from_client_body.__func__

    def slow_build(cls, found):
        built.append(found.etag)
        taking.set()
        release.wait(5)
        return build(cls, found)

    monkeypatch.setattr(PayloadEngine, "from_client_body", classmethod(slow_build))
    bodies.append(body_of([feature("a", enabled=False)], etag='"2"', built_at=2.0))
    taker = threading.Thread(
        target=engine.engine_for, args=("development",), kwargs={"revision": 2}
    )
    taker.start()
    assert taking.wait(5)

    meanwhile = [engine.engine_for("development", revision=2) for _ in range(3)]
    release.set()
    taker.join(5)

    assert meanwhile == [first] * 3
    assert built == ['"2"']
    assert engine.engine_for("development", revision=2).decide("a", {}) == off("a")


def test_engine_for__never_back_to_an_older_body(monkeypatch):
    newer = body_of([feature("a", enabled=False)], etag='"2"', built_at=2.0)
    older = body_of([feature("a")], etag='"1"', built_at=1.0)
    served = [newer]
    monkeypatch.setattr(engine, "client_features", lambda **_: served[-1])
    kept = engine.engine_for("development", revision=1)
    served.append(older)

    assert engine.engine_for("development", revision=1) is kept


@pytest.fixture
def kept_engines():
    """The engines this worker keeps (a declared cache), its bound restored after the test."""
    engines = named("evaluation engines")
    declared = engines.max_entries
    yield engines
    engines.rebound(max_entries=declared)


def test_engine_for__engines_kept_are_bounded(monkeypatch, kept_engines):
    kept_engines.rebound(max_entries=2)
    monkeypatch.setattr(
        engine, "client_features", lambda **_: body_of([feature("a")], etag='"1"', built_at=1.0)
    )
    for environment in ("one", "two", "three"):
        engine.engine_for(environment, revision=1)

    assert list(kept_engines) == ["two", "three"]


def test_payload_engine__threads_share_it__same_decisions():
    features = [
        {
            "name": f"f{n}",
            "project": "default",
            "enabled": n % 3 != 0,
            "strategies": [
                {
                    "name": "flexibleRollout",
                    "parameters": {"rollout": "50", "stickiness": "default", "groupId": f"f{n}"},
                    "variants": [
                        {
                            "name": "x",
                            "weight": 500,
                            "weightType": "variable",
                            "stickiness": "default",
                        },
                        {
                            "name": "y",
                            "weight": 500,
                            "weightType": "variable",
                            "stickiness": "default",
                        },
                    ],
                }
            ],
        }
        for n in range(60)
    ]
    shared = PayloadEngine(json.dumps({"version": 2, "features": features}).encode())
    contexts = [{"userId": f"user-{n}"} for n in range(200)]
    expected = [shared.decide_all(context) for context in contexts]
    found: list[list] = [[] for _ in range(6)]

    def work(index: int) -> None:
        for context in contexts:
            found[index].append(shared.decide_all(context))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert time.monotonic() - started < 30
    assert all(result == expected for result in found)


def test_payload_engine__skips_the_engine_for_flags_that_are_off(monkeypatch):
    shared = PayloadEngine(
        json.dumps({"version": 2, "features": [feature("a"), feature("b", enabled=False)]}).encode()
    )
    asked = []
    real = shared._engine.variant
    monkeypatch.setattr(
        shared._engine, "variant", lambda name, context: asked.append(name) or real(name, context)
    )

    assert [d.enabled for d in shared.decide_all({})] == [True, False]
    assert asked == [b"a"]


def test_engine_holds_the_client_payload(catalogue):
    body = client_features(projects=("*",), environment="development", revision=current_revision())

    assert engine.engine_for("development").etag == body.etag
