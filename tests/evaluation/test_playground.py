"""POST /api/admin/playground and /api/admin/playground/advanced: every flag decided for a context
by the engine, with why, as Unleash 8.2 answers (docs/evaluation.md)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation import engine, playground
from evaluation.engine import PayloadEngine
from features.models import FeatureEnvironment, FeatureStrategy, Segment
from flagadmin.core.models import TokenType
from tests.conftest import assert_error
from tests.factories import FeatureFactory, ProjectFactory, make_token

PLAYGROUND = "/api/admin/playground"
ADVANCED = "/api/admin/playground/advanced"
FEATURES = "/api/admin/projects/default/features"
CONTEXT = {"appName": "web", "userId": "u1", "properties": {"age": "30", "region": "eu"}}
BLUE = {
    "name": "blue",
    "weight": 1000,
    "weightType": "variable",
    "stickiness": "default",
    "payload": {"type": "string", "value": "sky"},
}


@pytest.fixture(autouse=True)
def fresh_engines():
    engine.clear_engines()
    playground.clear_reasons()
    yield
    engine.clear_engines()
    playground.clear_reasons()


def post(client, url: str, body=None):
    return client.post(
        url, json.dumps(body if body is not None else {}), content_type="application/json"
    )


def made(client, url: str, body=None) -> dict:
    response = post(client, url, body)
    assert response.status_code in (200, 201), response.content
    return response.json() if response.content else {}


def flag(client, name: str, *strategies: dict, project="default", on=True, **extra) -> list[str]:
    """The flag, its strategies in development (their ids), turned on there unless `on` is
    false."""
    features = f"/api/admin/projects/{project}/features"
    made(client, features, {"name": name, **extra})
    ids = [
        made(client, f"{features}/{name}/environments/development/strategies", strategy)["id"]
        for strategy in strategies
    ]
    if on:
        made(client, f"{features}/{name}/environments/development/on")
    return ids


def ask(client, context=None, **body):
    body = {"environment": "development", "context": context or CONTEXT, **body}
    response = post(client, PLAYGROUND, body)
    assert response.status_code == 200, response.content
    return response.json()


def by_name(answer: dict) -> dict[str, dict]:
    return {feature["name"]: feature for feature in answer["features"]}


def link(project: str, name: str, strategy_id: str, environment="development") -> dict:
    return {
        "edit": f"/projects/{project}/features/{name}/strategies/edit"
        f"?environmentId={environment}&strategyId={strategy_id}"
    }


OFF_VARIANT = {"name": "disabled", "enabled": False, "feature_enabled": False}
ON_NO_VARIANT = {
    "feature_enabled": True,
    "featureEnabled": True,
    "name": "disabled",
    "enabled": False,
}


# --- POST /api/admin/playground ---------------------------------------------------------------


def test_playground__whole_answer(admin_client):
    segment = Segment.objects.create(
        name="europe", constraints=[{"contextName": "region", "operator": "IN", "values": ["eu"]}]
    )
    beta, paused = flag(
        admin_client,
        "beta",
        {
            "name": "flexibleRollout",
            "title": "Adults in Europe",
            "parameters": {"rollout": "100", "stickiness": "default", "groupId": "beta"},
            "constraints": [{"contextName": "age", "operator": "NUM_GT", "value": "18"}],
            "segments": [segment.pk],
            "variants": [BLUE],
        },
        {"name": "default", "title": "paused", "disabled": True},
        impressionData=True,
    )
    (nordic,) = flag(
        admin_client,
        "nordic",
        {
            "name": "default",
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["no", "se"]}],
        },
    )

    answer = ask(admin_client)

    assert answer == {
        "input": {"environment": "development", "context": CONTEXT},
        "features": [
            {
                "isEnabled": True,
                "isEnabledInCurrentEnvironment": True,
                "hasUnsatisfiedDependency": False,
                "variant": {
                    "name": "blue",
                    "enabled": True,
                    "payload": {"type": "string", "value": "sky"},
                    "feature_enabled": True,
                },
                "variants": [BLUE],
                "name": "beta",
                "projectId": "default",
                "strategies": {
                    "result": True,
                    "data": [
                        {
                            "name": "flexibleRollout",
                            "id": beta,
                            "title": "Adults in Europe",
                            "disabled": False,
                            "parameters": {
                                "rollout": "100",
                                "stickiness": "default",
                                "groupId": "beta",
                            },
                            "result": {
                                "enabled": True,
                                "evaluationStatus": "complete",
                                "variant": {
                                    "name": "blue",
                                    "enabled": True,
                                    "payload": {"type": "string", "value": "sky"},
                                },
                                "variants": [BLUE],
                            },
                            "constraints": [
                                {
                                    "inverted": False,
                                    "values": [],
                                    "contextName": "age",
                                    "operator": "NUM_GT",
                                    "caseInsensitive": False,
                                    "value": "18",
                                    "result": True,
                                }
                            ],
                            "segments": [
                                {
                                    "name": "europe",
                                    "id": segment.pk,
                                    "result": True,
                                    "constraints": [
                                        {
                                            "contextName": "region",
                                            "operator": "IN",
                                            "values": ["eu"],
                                            "result": True,
                                        }
                                    ],
                                }
                            ],
                            "links": link("default", "beta", beta),
                        },
                        {
                            "name": "default",
                            "id": paused,
                            "title": "paused",
                            "disabled": True,
                            "parameters": {},
                            "result": {"enabled": "unknown", "evaluationStatus": "unevaluated"},
                            "constraints": [],
                            "segments": [],
                            "links": link("default", "beta", paused),
                        },
                    ],
                },
            },
            {
                "isEnabled": False,
                "isEnabledInCurrentEnvironment": True,
                "hasUnsatisfiedDependency": False,
                "variant": OFF_VARIANT,
                "variants": [],
                "name": "nordic",
                "projectId": "default",
                "strategies": {
                    "result": False,
                    "data": [
                        {
                            "name": "default",
                            "id": nordic,
                            "disabled": False,
                            "parameters": {},
                            "result": {"enabled": False, "evaluationStatus": "complete"},
                            "constraints": [
                                {
                                    "inverted": False,
                                    "values": ["no", "se"],
                                    "contextName": "country",
                                    "operator": "IN",
                                    "caseInsensitive": False,
                                    "result": False,
                                }
                            ],
                            "segments": [],
                            "links": link("default", "nordic", nordic),
                        }
                    ],
                },
            },
        ],
    }


def test_playground__flag_without_strategies(admin_client):
    made(admin_client, FEATURES, {"name": "bare"})

    (found,) = ask(admin_client)["features"]

    assert found["strategies"] == {"result": False, "data": []}
    assert (found["isEnabled"], found["isEnabledInCurrentEnvironment"]) == (False, False)


def test_playground__environment_variants(admin_client):
    flag(admin_client, "themed", {"name": "default"})
    variants = [
        {
            "name": "dark",
            "weight": 1000,
            "weightType": "variable",
            "stickiness": "default",
            "overrides": [],
        }
    ]
    FeatureEnvironment.objects.filter(feature_id="themed", environment_id="development").update(
        variants=variants
    )
    made(admin_client, f"{FEATURES}/themed/environments/development/off")
    made(admin_client, f"{FEATURES}/themed/environments/development/on")

    (found,) = ask(admin_client)["features"]

    assert found["variant"] == {
        "name": "dark",
        "enabled": True,
        "feature_enabled": True,
        "featureEnabled": True,
    }
    assert found["variants"] == variants


def test_playground__unsatisfied_dependency(admin_client):
    flag(admin_client, "parent", {"name": "default"}, on=False)
    flag(admin_client, "child", {"name": "default"})
    made(admin_client, f"{FEATURES}/child/dependencies", {"feature": "parent"})

    child = by_name(ask(admin_client))["child"]

    assert (child["isEnabled"], child["hasUnsatisfiedDependency"]) == (False, True)
    assert child["strategies"]["result"] is True
    assert child["variant"] == OFF_VARIANT


def test_playground__satisfied_dependency(admin_client):
    flag(admin_client, "parent", {"name": "default"})
    flag(admin_client, "child", {"name": "default"})
    made(admin_client, f"{FEATURES}/child/dependencies", {"feature": "parent"})

    child = by_name(ask(admin_client))["child"]

    assert (child["isEnabled"], child["hasUnsatisfiedDependency"]) == (True, False)
    assert child["variant"] == ON_NO_VARIANT


def test_playground__custom_strategy__incomplete_unknown(admin_client):
    (known,) = flag(admin_client, "custom", {"name": "default"})
    FeatureStrategy.objects.filter(pk=known).update(name="myCustom")
    made(admin_client, f"{FEATURES}/custom/environments/development/off")
    made(admin_client, f"{FEATURES}/custom/environments/development/on")

    found = by_name(ask(admin_client))["custom"]

    assert found["strategies"]["result"] == "unknown"
    assert found["strategies"]["data"][0]["result"] == {
        "enabled": "unknown",
        "evaluationStatus": "incomplete",
    }
    assert found["isEnabled"] is False  # the engine: a strategy it cannot decide is off


def test_playground__failing_segment_named(admin_client):
    segment = Segment.objects.create(
        name="americas", constraints=[{"contextName": "region", "operator": "IN", "values": ["us"]}]
    )
    flag(admin_client, "regional", {"name": "default", "segments": [segment.pk]})

    strategy = by_name(ask(admin_client))["regional"]["strategies"]["data"][0]

    assert strategy["result"] == {"enabled": False, "evaluationStatus": "complete"}
    assert strategy["segments"][0]["result"] is False


@pytest.mark.parametrize(
    ("projects", "names"),
    [
        pytest.param(None, ["everyone", "theirs"], id="absent-every-project"),
        pytest.param("*", ["everyone", "theirs"], id="star"),
        pytest.param(["other"], ["theirs"], id="one"),
        pytest.param(["default", "other"], ["everyone", "theirs"], id="two"),
        pytest.param([], [], id="none"),
        pytest.param(["nowhere"], [], id="unknown"),
    ],
)
def test_playground__projects(admin_client, projects, names):
    ProjectFactory(id="other")
    flag(admin_client, "everyone", {"name": "default"})
    flag(admin_client, "theirs", {"name": "default"}, project="other")
    body = {} if projects is None else {"projects": projects}

    answer = ask(admin_client, **body)

    assert [f["name"] for f in answer["features"]] == names
    assert answer["input"] == {"environment": "development", **body, "context": CONTEXT}


def test_playground__unknown_environment__every_flag_off(admin_client):
    flag(admin_client, "everyone", {"name": "default"})

    answer = post(admin_client, PLAYGROUND, {"environment": "nope", "context": CONTEXT}).json()

    assert answer["features"] == [
        {
            "isEnabled": False,
            "isEnabledInCurrentEnvironment": False,
            "hasUnsatisfiedDependency": False,
            "variant": OFF_VARIANT,
            "variants": [],
            "name": "everyone",
            "projectId": "default",
            "strategies": {"result": False, "data": []},
        }
    ]


def test_playground__context_environment_defaults_to_default(admin_client):
    environments = {"contextName": "environment", "operator": "IN", "values": ["default"]}
    flag(admin_client, "in-default", {"name": "default", "constraints": [environments]})

    assert ask(admin_client)["features"][0]["isEnabled"] is True
    named = ask(admin_client, {**CONTEXT, "environment": "production"})
    assert named["features"][0]["isEnabled"] is False


@pytest.mark.parametrize(
    ("current_time", "enabled"),
    [("2030-01-01T00:00:00Z", True), ("2020-01-01T00:00:00+02:00", False)],
)
def test_playground__current_time_decides_dates(admin_client, current_time, enabled):
    after = {
        "contextName": "currentTime",
        "operator": "DATE_AFTER",
        "value": "2025-06-01T00:00:00.000Z",
    }
    flag(admin_client, "launch", {"name": "default", "constraints": [after]})

    answer = ask(admin_client, {"appName": "web", "currentTime": current_time})

    assert answer["features"][0]["isEnabled"] is enabled
    assert answer["features"][0]["strategies"]["data"][0]["constraints"][0]["result"] is enabled


def test_playground__a_change_is_seen_at_once(admin_client):
    flag(admin_client, "everyone", {"name": "default"})
    assert ask(admin_client)["features"][0]["isEnabled"] is True

    made(admin_client, f"{FEATURES}/everyone/environments/development/off")

    assert ask(admin_client)["features"][0]["isEnabled"] is False


def test_playground__engine_behind_the_snapshot__answers_from_the_snapshot(
    admin_client, monkeypatch
):
    flag(admin_client, "everyone", {"name": "default"})
    stale = PayloadEngine(json.dumps({"version": 2, "features": []}).encode())
    monkeypatch.setattr(playground, "fresh_engine", lambda environment: stale)

    assert ask(admin_client)["features"][0]["isEnabled"] is True


def queries_of_an_answer_after_a_change(client, flags: int) -> int:
    for number in range(flags):
        constraint = {"contextName": "age", "operator": "NUM_GT", "value": str(number)}
        flag(client, f"flag-{flags}-{number}", {"name": "default", "constraints": [constraint]})
    with CaptureQueriesContext(connection) as queries:
        ask(client)
    return len(queries)


def test_playground__queries_do_not_grow_with_flags(admin_client):
    few = queries_of_an_answer_after_a_change(admin_client, 2)
    many = queries_of_an_answer_after_a_change(admin_client, 20)

    # The token, the revision, the client payload rebuilt (the flags changed), the snapshot.
    assert few == many <= 20


def test_playground__numbers_taken_as_strings(admin_client):
    context = {"appName": 7, "userId": 42, "properties": {"age": 30}}

    answer = ask(admin_client, context)

    assert answer["input"]["context"] == {
        "appName": "7",
        "userId": "42",
        "properties": {"age": "30"},
    }


def test_playground__other_context_fields_kept_and_read(admin_client):
    tenants = {"contextName": "tenant", "operator": "IN", "values": ["acme"]}
    flag(admin_client, "acme-only", {"name": "default", "constraints": [tenants]})

    answer = ask(admin_client, {"appName": "web", "tenant": "acme"})

    assert answer["input"]["context"] == {"appName": "web", "tenant": "acme"}
    assert answer["features"][0]["isEnabled"] is True


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        pytest.param(
            {"context": {"appName": "a"}},
            "/body/environment",
            "The `/body/environment` property is required. It was not present on the data you "
            "sent.",
            id="environment-missing",
        ),
        pytest.param(
            {"environment": "development"},
            "/body/context",
            "The `/body/context` property is required. It was not present on the data you sent.",
            id="context-missing",
        ),
        pytest.param(
            {"environment": "development", "context": {}},
            "/body/context/appName",
            "The `/body/context/appName` property is required. It was not present on the data you "
            "sent.",
            id="app-name-missing",
        ),
        pytest.param(
            {"environment": "development", "context": {"appName": ""}},
            "/body/context/appName",
            "The `/body/context/appName` property must NOT have fewer than 1 characters. You sent "
            '"".',
            id="app-name-empty",
        ),
        pytest.param(
            {"environment": "development", "context": {"appName": "a"}, "projects": "all"},
            "/body/projects",
            "The `/body/projects` property must be array, or equal to one of the allowed values: "
            '"*". You sent "all".',
            id="projects-not-star",
        ),
        pytest.param(
            {"environment": "development", "context": {"appName": "a"}, "projects": [1]},
            "/body/projects/0",
            "The `/body/projects/0` property must be string. You sent 1.",
            id="project-not-string",
        ),
        pytest.param(
            {
                "environment": "development",
                "context": {"appName": "a", "currentTime": "2024-01-01T00:00:00"},
            },
            "/body/context/currentTime",
            'The `/body/context/currentTime` property must match format "date-time". You sent '
            '"2024-01-01T00:00:00".',
            id="current-time-without-offset",
        ),
        pytest.param(
            {"environment": "development", "context": {"appName": "a", "currentTime": "soon"}},
            "/body/context/currentTime",
            'The `/body/context/currentTime` property must match format "date-time". You sent '
            '"soon".',
            id="current-time-not-a-time",
        ),
        pytest.param(
            {"environment": "development", "context": {"appName": "a", "properties": {"x": {}}}},
            "/body/context/properties/x",
            "The `/body/context/properties/x` property must be string. You sent {}.",
            id="property-object",
        ),
        pytest.param(
            {"environment": "development", "context": {"appName": "a", "userId": ["u"]}},
            "/body/context/userId",
            'The `/body/context/userId` property must be string. You sent ["u"].',
            id="user-id-list",
        ),
        pytest.param(
            {"environment": 5, "context": {"appName": "a"}},
            "/body/environment",
            "The `/body/environment` property must be string. You sent 5.",
            id="environment-number",
        ),
        pytest.param(
            {"environment": "development", "context": "web"},
            "/body/context",
            'The `/body/context` property must be object. You sent "web".',
            id="context-not-object",
        ),
    ],
)
def test_playground__invalid__400(admin_client, body, path, message):
    response = post(admin_client, PLAYGROUND, body)

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [{"path": path, "message": message}]


def test_playground__anonymous__401(anon_client, db):
    assert_error(post(anon_client, PLAYGROUND, {}), 401, "AuthenticationRequired")


def test_playground__client_token__403(client_token_client):
    response = post(
        client_token_client, PLAYGROUND, {"environment": "development", "context": CONTEXT}
    )

    assert_error(response, 403, "NoAccessError")


def test_playground__viewer__200(viewer_client):
    FeatureFactory(name="seen")

    response = post(viewer_client, PLAYGROUND, {"environment": "development", "context": CONTEXT})

    assert response.status_code == 200
    assert [f["name"] for f in response.json()["features"]] == ["seen"]


def test_playground__not_json__415(admin_client):
    response = admin_client.post(PLAYGROUND, "environment=development", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


@pytest.mark.parametrize("url", [PLAYGROUND, ADVANCED])
def test_playground__get__405(admin_client, url):
    assert_error(admin_client.get(url), 405, "MethodNotAllowedError")


# --- POST /api/admin/playground/advanced --------------------------------------------------------


def test_advanced__combinations_per_environment(admin_client):
    country = {"contextName": "country", "operator": "IN", "values": ["no"]}
    (norway,) = flag(admin_client, "norway", {"name": "default", "constraints": [country]})
    body = {
        "environments": ["development", "production"],
        "context": {"appName": "web", "userId": "a,b", "properties": {"country": "no,se"}},
    }

    answer = post(admin_client, ADVANCED, body).json()

    contexts = [
        {"userId": "a", "country": "no", "appName": "web"},
        {"userId": "a", "country": "se", "appName": "web"},
        {"userId": "b", "country": "no", "appName": "web"},
        {"userId": "b", "country": "se", "appName": "web"},
    ]
    (feature,) = answer["features"]
    assert answer["input"] == body
    assert "warnings" not in answer
    assert (feature["name"], feature["projectId"]) == ("norway", "default")
    assert list(feature["environments"]) == ["development", "production"]
    development = feature["environments"]["development"]
    assert [item["context"] for item in development] == contexts
    assert [item["isEnabled"] for item in development] == [True, False, True, False]
    assert development[0] == {
        "isEnabled": True,
        "isEnabledInCurrentEnvironment": True,
        "hasUnsatisfiedDependency": False,
        "variant": ON_NO_VARIANT,
        "context": contexts[0],
        "variants": [],
        "name": "norway",
        "environment": "development",
        "projectId": "default",
        "strategies": {
            "result": True,
            "data": [
                {
                    "name": "default",
                    "id": norway,
                    "disabled": False,
                    "parameters": {},
                    "result": {"enabled": True, "evaluationStatus": "complete"},
                    "constraints": [
                        {
                            "inverted": False,
                            "values": ["no"],
                            "contextName": "country",
                            "operator": "IN",
                            "caseInsensitive": False,
                            "result": True,
                        }
                    ],
                    "segments": [],
                    "links": link("default", "norway", norway),
                }
            ],
        },
    }
    production = feature["environments"]["production"]
    assert [(item["isEnabled"], item["strategies"]["data"]) for item in production] == [
        (False, [])
    ] * 4


def test_advanced__fields_neither_string_nor_properties__left_out_with_a_warning(admin_client):
    flag(admin_client, "everyone", {"name": "default"})
    body = {
        "environments": ["development"],
        "context": {"appName": "web", "tenant": 5, "beta": True},
    }

    answer = post(admin_client, ADVANCED, body).json()

    assert answer["warnings"] == {"invalidContextProperties": ["tenant", "beta"]}
    assert answer["features"][0]["environments"]["development"][0]["context"] == {"appName": "web"}


def test_advanced__over_the_limit__400(admin_client, monkeypatch):
    monkeypatch.setattr(playground, "MAX_COMBINATIONS", 7)
    flag(admin_client, "one", {"name": "default"})
    flag(admin_client, "two", {"name": "default"})
    body = {
        "environments": ["development", "production"],
        "context": {"appName": "web", "userId": "a,b"},
    }

    response = post(admin_client, ADVANCED, body)

    message = (
        "Rejecting evaluation as it would generate 8 combinations exceeding 7 limit. Please "
        "reduce the number of selected environments (2), features (2), context field "
        "combinations (2)."
    )
    error = assert_error(response, 400, "ValidationError")
    assert (error["message"], error["details"]) == (message, [{"message": message}])


def test_advanced__huge_combinations_refused_before_they_are_made(admin_client):
    flag(admin_client, "one", {"name": "default"})
    many = ",".join(str(n) for n in range(60))
    context = {"appName": many, "userId": many, "sessionId": many, "remoteAddress": many}

    response = post(admin_client, ADVANCED, {"environments": ["development"], "context": context})

    assert_error(response, 400, "ValidationError")


def test_advanced__no_flags__no_combinations_made(admin_client):
    many = ",".join(str(n) for n in range(200))
    context = {"appName": many, "userId": many, "sessionId": many}

    response = post(admin_client, ADVANCED, {"environments": ["development"], "context": context})

    assert response.status_code == 200
    assert response.json()["features"] == []


def test_advanced__one_environment_named_many_times__one_snapshot(admin_client):
    # schemathesis sent 1,000 copies of one environment: each copy built its own snapshot and
    # engine, past nginx's 30 s. Each copy is still answered, as Unleash answers it.
    flag(admin_client, "one", {"name": "default"})

    def queries_and_answer(copies: int) -> tuple[int, dict]:
        body = {"environments": ["development"] * copies, "context": {"appName": "web"}}
        with CaptureQueriesContext(connection) as queries:
            response = post(admin_client, ADVANCED, body)
        assert response.status_code == 200
        return len(queries), response.json()

    queries_and_answer(1)  # the worker's engine and token lookup, kept from then on
    once, _ = queries_and_answer(1)
    many, answer = queries_and_answer(1000)

    assert many == once
    (feature,) = answer["features"]
    assert len(feature["environments"]["development"]) == 1000


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        pytest.param(
            {"environments": [], "context": {"appName": "a"}},
            "/body/environments",
            "The `/body/environments` property must NOT have fewer than 1 items. You sent [].",
            id="no-environment",
        ),
        pytest.param(
            {"environments": ["bad env"], "context": {"appName": "a"}},
            "/body/environments/0",
            'The `/body/environments/0` property must match pattern "^[a-zA-Z0-9~_.-]+$". You '
            'sent "bad env".',
            id="pattern",
        ),
        pytest.param(
            {"environments": "development", "context": {"appName": "a"}},
            "/body/environments",
            'The `/body/environments` property must be array. You sent "development".',
            id="not-a-list",
        ),
        pytest.param(
            {"environments": ["development"], "context": {}},
            "/body/context/appName",
            "The `/body/context/appName` property is required. It was not present on the data you "
            "sent.",
            id="app-name-missing",
        ),
    ],
)
def test_advanced__invalid__400(admin_client, body, path, message):
    error = assert_error(post(admin_client, ADVANCED, body), 400, "ValidationError")

    assert error["details"] == [{"path": path, "message": message}]


def test_advanced__client_token__403(db):
    token = make_token(TokenType.CLIENT, projects=["default"])[1]
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=token)

    response = post(client, ADVANCED, {"environments": ["development"], "context": CONTEXT})

    assert_error(response, 403, "NoAccessError")
