"""The Frontend API: GET and POST /api/frontend (the enabled flags for a context, in Unleash
8.2's shape), its ETag and 304, its context rules, the token's scope, the metrics and
registration endpoints, and CORS. Expected bodies and headers as Unleash 8.2 gave them for the
same flags and requests (bench/frontend_versus_unleash.py compares live)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from evaluation.engine import PayloadEngine, clear_engines
from features.models import ClientInstance, FeatureEnvironment, FeatureUsageBucket
from flagadmin.core.models import TokenType
from frontend_api import middleware
from frontend_api.answers import Reads, forget_answers, reads_of
from frontend_api.authentication import forget_tokens
from frontend_api.context import context_from_query, unleash_context
from frontend_api.toggles import express_etag, forget_encoded
from frontend_api.views import FrontendFeaturesView
from tests.conftest import assert_error
from tests.factories import ProjectFactory, make_token

FEATURES = "/api/admin/projects/{project}/features"
FRONTEND = "/api/frontend"
ROLLOUT_100 = {"rollout": "100", "stickiness": "default", "groupId": "g"}


@pytest.fixture(autouse=True)
def fresh_frontend_memory():
    for forget in (forget_tokens, clear_engines, forget_encoded, forget_answers):
        forget()
    yield
    for forget in (forget_tokens, clear_engines, forget_encoded, forget_answers):
        forget()


def post(client, url: str, body, **headers):
    return client.post(url, json.dumps(body), content_type="application/json", **headers)


def browser(projects: list[str] | None = None, environment: str = "development") -> APIClient:
    client = APIClient()
    token = make_token(TokenType.FRONTEND, projects=projects or ["*"], environment=environment)[1]
    client.credentials(HTTP_AUTHORIZATION=token)
    return client


def make_flag(
    admin_client,
    name: str,
    *,
    project: str = "default",
    environment: str = "development",
    strategy: dict | None = None,
    impression_data: bool = False,
    on: bool = True,
) -> None:
    """A flag with one strategy in `environment` (a 100 % rollout unless given), on or off."""
    created = post(
        admin_client,
        FEATURES.format(project=project),
        {"name": name, "impressionData": impression_data},
    )
    assert created.status_code == 201, created.content
    base = f"{FEATURES.format(project=project)}/{name}/environments/{environment}"
    strategy = strategy or {"name": "flexibleRollout", "parameters": ROLLOUT_100}
    assert post(admin_client, f"{base}/strategies", strategy).status_code == 200
    if on:
        response = admin_client.post(f"{base}/on", content_type="application/json")
        assert response.status_code == 200


def toggle(name: str, variant: dict | None = None, impression_data: bool = False) -> dict:
    variant = variant or {"name": "disabled", "enabled": False}
    return {
        "name": name,
        "enabled": True,
        "variant": {**variant, "feature_enabled": True, "featureEnabled": True},
        "impressionData": impression_data,
    }


COUNTRY_NO = {
    "name": "flexibleRollout",
    "parameters": ROLLOUT_100,
    "constraints": [{"contextName": "country", "operator": "IN", "values": ["no"]}],
}
BLUE = {
    "name": "blue",
    "weight": 1000,
    "weightType": "variable",
    "stickiness": "default",
    "payload": {"type": "json", "value": '{"a":1}'},
}


@pytest.fixture
def flags(admin_client) -> None:
    """As on the reference: `feprobe-a` (impression data, a constraint on `country`, a variant
    with a payload) and `feprobe-b` (on for everyone)."""
    make_flag(
        admin_client,
        "feprobe-a",
        strategy={**COUNTRY_NO, "variants": [BLUE]},
        impression_data=True,
    )
    make_flag(admin_client, "feprobe-b")
    make_flag(admin_client, "feprobe-off", on=False)


A_AND_B = {
    "toggles": [
        toggle(
            "feprobe-a",
            {"name": "blue", "enabled": True, "payload": {"type": "json", "value": '{"a":1}'}},
            impression_data=True,
        ),
        toggle("feprobe-b"),
    ]
}
B_ONLY = {"toggles": [toggle("feprobe-b")]}


# --- GET and POST /api/frontend ----------------------------------------------------------------


def test_frontend_features__get__enabled_flags_in_unleash_shape(flags):
    response = browser().get(FRONTEND, {"userId": "1", "properties[country]": "no"})

    assert response.status_code == 200
    # Byte for byte what Unleash 8.2 answered for the same flags and query.
    assert response.content == (
        b'{"toggles":[{"name":"feprobe-a","enabled":true,"variant":{"name":"blue","enabled":true,'
        b'"payload":{"type":"json","value":"{\\"a\\":1}"},"feature_enabled":true,'
        b'"featureEnabled":true},"impressionData":true},{"name":"feprobe-b","enabled":true,'
        b'"variant":{"name":"disabled","enabled":false,"feature_enabled":true,'
        b'"featureEnabled":true},"impressionData":false}]}'
    )
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Cache-Control"] == "no-cache"
    assert response["ETag"] == 'W/"161-ZAnqyDlzXC0ZgUfM6fZi7dIXI70"'


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"userId": "1", "properties[country]": "no"}, A_AND_B, id="properties[x]"),
        pytest.param({"userId": "1", "country": "no"}, A_AND_B, id="plain-field-is-a-property"),
        pytest.param({"userId": "1", "country": "se"}, B_ONLY, id="other-value"),
        pytest.param({"userId": "1", "country": ["no", "se"]}, B_ONLY, id="repeated-is-a-list"),
        pytest.param({}, B_ONLY, id="empty"),
    ],
)
def test_frontend_features__get__context_from_the_query(flags, query, expected):
    assert browser().get(FRONTEND, query).json() == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param({"context": {"userId": "1", "properties": {"country": "no"}}}, A_AND_B),
        pytest.param({"context": {"userId": "1", "country": "no"}}, A_AND_B, id="plain-field"),
        pytest.param({"userId": "1", "country": "no"}, B_ONLY, id="outside-context-ignored"),
        pytest.param({}, B_ONLY, id="no-context"),
        pytest.param({"context": {"userId": 1, "sessionId": None}}, B_ONLY, id="coerced"),
    ],
)
def test_frontend_features__post__context_from_the_body(flags, body, expected):
    response = post(browser(), FRONTEND, body)

    assert response.status_code == 200, response.content
    assert response.json() == expected
    assert response["ETag"] == express_etag(response.content)


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        pytest.param([], "/body", "The `/body` property must be object. You sent [].", id="list"),
        pytest.param(
            {"context": "x"},
            "/body/context",
            'The `/body/context` property must be object. You sent "x".',
            id="context-string",
        ),
        pytest.param(
            {"context": None},
            "/body/context",
            "The `/body/context` property must be object. You sent null.",
            id="context-null",
        ),
        pytest.param(
            {"context": {"appName": ""}},
            "/body/context/appName",
            "The `/body/context/appName` property must NOT have fewer than 1 characters. "
            'You sent "".',
            id="empty-app-name",
        ),
        pytest.param(
            {"context": {"currentTime": "2024-01-01"}},
            "/body/context/currentTime",
            'The `/body/context/currentTime` property must match format "date-time". '
            'You sent "2024-01-01".',
            id="date-not-date-time",
        ),
        pytest.param(
            {"context": {"properties": {"country": ["no"]}}},
            "/body/context/properties/country",
            'The `/body/context/properties/country` property must be string. You sent ["no"].',
            id="property-list",
        ),
        pytest.param(
            {"context": {"properties": None}},
            "/body/context/properties",
            "The `/body/context/properties` property must be object. You sent null.",
            id="properties-null",
        ),
    ],
)
def test_frontend_features__post__invalid_body__400(db, body, path, message):
    error = assert_error(post(browser(), FRONTEND, body), 400, "ValidationError")

    # Unleash's messages and paths (BadDataError there).
    assert error["details"] == [{"path": path, "message": message}]


def test_frontend_features__post__not_json__415(db):
    response = browser().post(FRONTEND, "x", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


def test_frontend_features__only_enabled_flags_of_the_token_projects(admin_client):
    ProjectFactory(id="shop")
    make_flag(admin_client, "in-default")
    make_flag(admin_client, "in-shop", project="shop")
    make_flag(admin_client, "in-production", environment="production")

    names = {
        "all": browser().get(FRONTEND).json(),
        "shop": browser(projects=["shop"]).get(FRONTEND).json(),
        "production": browser(environment="production").get(FRONTEND).json(),
    }

    assert names == {
        "all": {"toggles": [toggle("in-default"), toggle("in-shop")]},
        "shop": {"toggles": [toggle("in-shop")]},
        "production": {"toggles": [toggle("in-production")]},
    }


def test_frontend_features__remote_address_defaults_to_the_caller(admin_client):
    make_flag(
        admin_client,
        "office",
        strategy={"name": "remoteAddress", "parameters": {"IPs": "10.1.2.3"}},
    )
    client = browser()

    from_office = client.get(FRONTEND, REMOTE_ADDR="10.1.2.3").json()
    elsewhere = client.get(FRONTEND, REMOTE_ADDR="10.9.9.9").json()
    said = client.get(FRONTEND, {"remoteAddress": "10.1.2.3"}, REMOTE_ADDR="10.9.9.9").json()

    assert (from_office, elsewhere, said) == (
        {"toggles": [toggle("office")]},
        {"toggles": []},
        {"toggles": [toggle("office")]},
    )


def test_frontend_features__current_time_is_a_property_here(admin_client):
    # Unleash's Frontend API moves `currentTime` into the properties, where its SDK's date
    # constraints do not read it: they compare with the time of the request (measured on the
    # reference).
    make_flag(
        admin_client,
        "from-2100",
        strategy={
            "name": "flexibleRollout",
            "parameters": ROLLOUT_100,
            "constraints": [
                {
                    "contextName": "currentTime",
                    "operator": "DATE_AFTER",
                    "value": "2100-01-01T00:00:00Z",
                }
            ],
        },
    )
    client = browser()

    assert client.get(FRONTEND, {"currentTime": "2200-01-01T00:00:00Z"}).json() == {"toggles": []}
    body = {"context": {"currentTime": "2200-01-01T00:00:00Z"}}
    assert post(client, FRONTEND, body).json() == {"toggles": []}


def test_frontend_features__change_reaches_the_answer(admin_client, settings):
    settings.CLIENT_API_REUSE_SECONDS = 0
    make_flag(admin_client, "later", on=False)
    client = browser()
    assert client.get(FRONTEND).json() == {"toggles": []}

    response = admin_client.post(
        f"{FEATURES.format(project='default')}/later/environments/development/on",
        content_type="application/json",
    )

    assert response.status_code == 200
    assert client.get(FRONTEND).json() == {"toggles": [toggle("later")]}


# --- ETag and 304 -------------------------------------------------------------------------------


def test_frontend_features__if_none_match__304_until_the_answer_changes(admin_client, settings):
    settings.CLIENT_API_REUSE_SECONDS = 0
    make_flag(admin_client, "first")
    client = browser()
    first = client.get(FRONTEND, {"userId": "1"})

    again = client.get(FRONTEND, {"userId": "1"}, HTTP_IF_NONE_MATCH=first["ETag"])
    make_flag(admin_client, "second")
    changed = client.get(FRONTEND, {"userId": "1"}, HTTP_IF_NONE_MATCH=first["ETag"])

    assert (again.status_code, again.content) == (304, b"")
    assert again["ETag"] == first["ETag"]
    assert again["Cache-Control"] == "no-cache"
    assert changed.status_code == 200
    assert [t["name"] for t in changed.json()["toggles"]] == ["first", "second"]
    assert changed["ETag"] != first["ETag"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param({"HTTP_IF_NONE_MATCH": "{etag}"}, 304, id="weak"),
        pytest.param({"HTTP_IF_NONE_MATCH": "{strong}"}, 304, id="strong-form"),
        pytest.param({"HTTP_IF_NONE_MATCH": '"other", {etag}'}, 304, id="in-a-list"),
        pytest.param({"HTTP_IF_NONE_MATCH": "*"}, 304, id="star"),
        pytest.param({"HTTP_IF_NONE_MATCH": '"other"'}, 200, id="other"),
        pytest.param(
            {"HTTP_IF_NONE_MATCH": "{etag}", "HTTP_CACHE_CONTROL": "no-cache"}, 200, id="no-cache"
        ),
    ],
)
def test_frontend_features__if_none_match_as_express_reads_it(flags, headers, status):
    client = browser()
    etag = client.get(FRONTEND, {"userId": "1"})["ETag"]
    headers = {
        key: value.format(etag=etag, strong=etag.removeprefix("W/"))
        for key, value in headers.items()
    }

    assert client.get(FRONTEND, {"userId": "1"}, **headers).status_code == status


def test_frontend_features__post_never_304(flags):
    client = browser()
    first = post(client, FRONTEND, {"context": {"userId": "1"}})

    again = post(client, FRONTEND, {"context": {"userId": "1"}}, HTTP_IF_NONE_MATCH=first["ETag"])

    assert again.status_code == 200
    assert again["ETag"] == first["ETag"]


# --- no query once the state is current --------------------------------------------------------


@pytest.mark.parametrize("count", [1, 30])
def test_frontend_features__no_query_while_token_and_state_are_current(
    admin_client, django_assert_num_queries, settings, count
):
    settings.CLIENT_API_REUSE_SECONDS = 60
    for number in range(count):
        make_flag(admin_client, f"f{number}", strategy={**COUNTRY_NO, "variants": [BLUE]})
    client = browser()
    first = client.get(FRONTEND, {"userId": "1", "country": "no"})

    with django_assert_num_queries(0):
        again = client.get(FRONTEND, {"userId": "2", "country": "no"})
        posted = post(client, FRONTEND, {"context": {"userId": "3", "country": "se"}})
        fresh = client.get(
            FRONTEND, {"userId": "1", "country": "no"}, HTTP_IF_NONE_MATCH=first["ETag"]
        )

    assert len(first.json()["toggles"]) == count
    assert len(again.json()["toggles"]) == count
    assert posted.json() == {"toggles": []}
    assert fresh.status_code == 304


# --- other paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/client/features", "/health", "/internal-backstage/prometheus"])
def test_frontend_api__proxy_paths_not_implemented__405(db, path):
    error = assert_error(browser().get(FRONTEND + path), 405, "NotImplementedError")

    assert error["message"] == "The frontend API does not support this endpoint."


def test_frontend_api__unknown_path__404_after_authentication(db):
    assert_error(APIClient().get(f"{FRONTEND}/nope"), 401, "AuthenticationRequired")
    error = assert_error(browser().get(f"{FRONTEND}/nope"), 404, "NotFoundError")
    assert (
        error["message"] == "The path you were looking for (/api/frontend/nope) is not available."
    )


def test_frontend_api__trailing_slash__same_answer(flags):
    client = browser()

    assert client.get(f"{FRONTEND}/", {"userId": "1"}).json() == B_ONLY


def test_frontend_api__put__405(db):
    response = browser().put(FRONTEND, "{}", content_type="application/json")

    assert_error(response, 405, "MethodNotAllowedError")


# --- metrics and registration ------------------------------------------------------------------


METRICS = {
    "appName": "web",
    "instanceId": "browser",
    "bucket": {
        "start": "2026-11-28T00:00:00Z",
        "stop": "2026-11-28T00:01:00Z",
        "toggles": {"feprobe-b": {"yes": 3, "no": 1, "variants": {"disabled": 3}}},
    },
    "impactMetrics": [],
}


def test_frontend_metrics__counted_as_sdk_metrics(flags):
    response = post(
        browser(),
        f"{FRONTEND}/client/metrics",
        METRICS,
        HTTP_UNLEASH_SDK="unleash-js-sdk:3.8.2",
    )

    assert response.status_code == 200
    assert response.content == b"OK"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    bucket = FeatureUsageBucket.objects.get()
    assert (bucket.feature_name, bucket.environment, bucket.app_name, bucket.yes, bucket.no) == (
        "feprobe-b",
        "development",
        "web",
        3,
        1,
    )
    seen = FeatureEnvironment.objects.get(feature__name="feprobe-b", environment_id="development")
    assert timezone.now() - seen.last_seen_at < timedelta(minutes=1)
    instance = ClientInstance.objects.get()
    assert (instance.app_name, instance.instance_id, instance.sdk_version) == (
        "web",
        "browser",
        "unleash-js-sdk:3.8.2",
    )


def test_frontend_metrics__flags_outside_the_token_projects_ignored(admin_client, flags):
    ProjectFactory(id="shop")
    make_flag(admin_client, "in-shop", project="shop")
    body = {**METRICS, "bucket": {**METRICS["bucket"], "toggles": {"feprobe-b": {"yes": 1}}}}

    post(browser(projects=["shop"]), f"{FRONTEND}/client/metrics", body)

    assert not FeatureUsageBucket.objects.exists()


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({}, "/body/appName", id="no-app-name"),
        pytest.param({"appName": "web", "bucket": {"toggles": {"a": {"yes": -1}}}}, None),
    ],
)
def test_frontend_metrics__invalid__400(db, body, path):
    error = assert_error(
        post(browser(), f"{FRONTEND}/client/metrics", body), 400, "ValidationError"
    )

    if path:
        assert error["details"][0]["path"] == path


REGISTRATION = {
    "appName": "web",
    "instanceId": "i1",
    "sdkVersion": "unleash-js-sdk:3.8.2",
    "strategies": [],
    "started": "2026-11-28T00:00:00Z",
    "interval": 1000,
}


def test_frontend_register__200_ok(db):
    response = post(browser(), f"{FRONTEND}/client/register", REGISTRATION)

    assert (response.status_code, response.content) == (200, b"OK")


@pytest.mark.parametrize("missing", ["appName", "interval", "started", "strategies"])
def test_frontend_register__required_field_missing__400(db, missing):
    body = {key: value for key, value in REGISTRATION.items() if key != missing}

    error = assert_error(
        post(browser(), f"{FRONTEND}/client/register", body), 400, "ValidationError"
    )

    assert [detail["path"] for detail in error["details"]] == [f"/body/{missing}"]


# --- CORS -----------------------------------------------------------------------------------------


def test_cors__any_origin_by_default(flags):
    response = browser().get(FRONTEND, HTTP_ORIGIN="https://app.example")

    assert response["Access-Control-Allow-Origin"] == "*"
    assert response["Access-Control-Allow-Credentials"] == "true"
    assert response["Access-Control-Expose-Headers"] == "ETag"
    assert "Origin" in response["Vary"]


def test_cors__errors_carry_it_too(db):
    response = APIClient().get(FRONTEND, HTTP_ORIGIN="https://app.example")

    assert response.status_code == 401
    assert response["Access-Control-Allow-Origin"] == "*"


def test_cors__preflight__204_before_authentication(db):
    response = APIClient().options(
        f"{FRONTEND}/client/metrics",
        HTTP_ORIGIN="https://app.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization,content-type,unleash-sdk",
    )

    # As Unleash 8.2 answers it.
    assert response.status_code == 204
    assert response.content == b""
    assert {
        name: response[name]
        for name in (
            "Vary",
            "Access-Control-Allow-Origin",
            "Access-Control-Allow-Credentials",
            "Access-Control-Allow-Methods",
            "Access-Control-Allow-Headers",
            "Access-Control-Max-Age",
            "Access-Control-Expose-Headers",
        )
    } == {
        "Vary": "Origin, Access-Control-Request-Headers",
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Credentials": "true",
        "Access-Control-Allow-Methods": "GET,HEAD,PUT,PATCH,POST,DELETE",
        "Access-Control-Allow-Headers": "authorization,content-type,unleash-sdk",
        "Access-Control-Max-Age": "86400",
        "Access-Control-Expose-Headers": "ETag",
    }


ORIGINS = ["https://app.example", "http://localhost:3000"]


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        pytest.param("https://app.example", "https://app.example", id="listed"),
        pytest.param("http://localhost:3000", "http://localhost:3000", id="listed-with-port"),
        pytest.param("https://evil.example", None, id="not-listed"),
        pytest.param(None, None, id="no-origin"),
    ],
)
def test_cors__configured_origins__reflected_when_listed(flags, origin, allowed):
    headers = {"HTTP_ORIGIN": origin} if origin else {}
    with override_settings(FRONTEND_API_ORIGINS=ORIGINS):
        from django.test import Client

        response = Client().options(FRONTEND, **headers)
        answer = browser().get(FRONTEND, **headers)

    assert response.status_code == 204
    assert response.get("Access-Control-Allow-Origin") == allowed
    assert answer.status_code == 200
    assert answer.get("Access-Control-Allow-Origin") == allowed
    assert "Origin" in answer["Vary"]


def test_cors__other_paths_untouched(admin_client):
    response = admin_client.get("/api/admin/projects", HTTP_ORIGIN="https://app.example")

    assert "Access-Control-Allow-Origin" not in response


@pytest.mark.parametrize(
    ("origins", "valid"),
    [
        (["*"], True),
        (["https://a.example", "http://localhost:3000"], True),
        (["https://a.example/"], False),
        (["https://*.example"], False),
        (["a.example"], False),
        (["https://a.example:443"], False),
    ],
)
def test_cors__origins_checked_as_unleash_checks_them(origins, valid):
    from django.core.exceptions import ImproperlyConfigured

    from frontend_api.middleware import allowed_origins

    with override_settings(FRONTEND_API_ORIGINS=origins):
        if valid:
            allowed_origins()
        else:
            with pytest.raises(ImproperlyConfigured):
                allowed_origins()


# --- the context, as Unleash builds it --------------------------------------------------------


def test_context_from_query__as_qs_nests_it():
    query = [
        ("userId", "u"),
        ("properties[country]", "no"),
        ("properties[tier]", "a"),
        ("properties[tier]", "b"),
        ("tags[]", "x"),
        ("deep[a][b]", "c"),
        ("plain", "p"),
    ]

    assert context_from_query(query) == {
        "userId": "u",
        "properties": {"country": "no", "tier": ["a", "b"]},
        "tags": ["x"],
        "deep": {},
        "plain": "p",
    }


def test_unleash_context__defaults_and_properties():
    context = unleash_context(
        {
            "userId": "u",
            "appName": "",
            "currentTime": "2030-01-01T00:00:00Z",
            "tier": ["a", "b"],
            "count": 5,
            "gone": None,
            "properties": {"tier": "gold", "flag": True},
        },
        "10.0.0.1",
    )

    session = context.pop("sessionId")
    assert len(session) == 36
    assert context == {
        "userId": "u",
        "remoteAddress": "10.0.0.1",
        "properties": {
            "tier": "gold",
            "count": "5",
            "flag": "true",
        },
    }


# --- answered from memory ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "ask",
    [
        pytest.param(lambda c: c.get(FRONTEND, {"userId": "1", "sessionId": "s"}), id="get"),
        pytest.param(
            lambda c: post(c, FRONTEND, {"context": {"userId": "1", "country": "no"}}), id="post"
        ),
        pytest.param(
            lambda c: c.get(FRONTEND, {"userId": "1"}, HTTP_ORIGIN="https://app.example"),
            id="cors",
        ),
    ],
)
def test_frontend_features__from_memory__the_view_s_answer(flags, settings, monkeypatch, ask):
    settings.CLIENT_API_REUSE_SECONDS = 60
    client = browser()
    through_view = []
    original = FrontendFeaturesView.dispatch

    def dispatch(view, request, *args, **kwargs):
        through_view.append(request.method)
        return original(view, request, *args, **kwargs)

    monkeypatch.setattr(FrontendFeaturesView, "dispatch", dispatch)

    by_view = ask(client)  # the token is looked up: through the view
    from_memory = ask(client)
    forget_tokens()
    by_view_again = ask(client)

    assert len(through_view) == 2

    for answer in (from_memory, by_view_again):
        assert answer.status_code == by_view.status_code == 200
        assert answer.content == by_view.content
        assert dict(answer.headers) == dict(by_view.headers)


# --- answers kept for contexts that come back ---------------------------------------------------


@pytest.fixture
def engine_calls(monkeypatch) -> list:
    calls = []
    original = PayloadEngine.decide_all

    def decide_all(engine, *args, **kwargs):
        calls.append(args[0])
        return original(engine, *args, **kwargs)

    monkeypatch.setattr(PayloadEngine, "decide_all", decide_all)
    return calls


def test_answers__same_session_context__decided_once(flags, engine_calls):
    client = browser()
    context = {"userId": "1", "sessionId": "s1", "properties[country]": "no"}

    first = client.get(FRONTEND, context)
    again = client.get(FRONTEND, context)
    posted = post(
        client, FRONTEND, {"context": {"userId": "1", "sessionId": "s1", "country": "no"}}
    )
    other = client.get(FRONTEND, {**context, "userId": "2"})

    assert first.content == again.content == posted.content
    assert first.json() == other.json() == A_AND_B
    assert len(engine_calls) == 2  # the first context, and the other user's


def test_answers__neither_user_nor_session__decided_every_time(flags, engine_calls):
    # `default` stickiness then reads a sessionId drawn at random for each request.
    client = browser()

    for _ in range(3):
        assert client.get(FRONTEND, {"properties[country]": "se"}).json() == B_ONLY

    assert len(engine_calls) == 3


def test_answers__user_without_session__decided_once(flags, engine_calls):
    # With a userId, `default` stickiness never reads the random sessionId.
    client = browser()

    for _ in range(3):
        assert client.get(FRONTEND, {"userId": "1"}).json() == B_ONLY

    assert len(engine_calls) == 1


def test_answers__what_no_rule_reads__shares_the_answer(flags, engine_calls):
    client = browser()

    first = client.get(FRONTEND, {"userId": "1", "properties[tier]": "gold", "country": "no"})
    unread = client.get(FRONTEND, {"userId": "1", "properties[tier]": "silver", "country": "no"})
    read = client.get(FRONTEND, {"userId": "1", "properties[tier]": "gold", "country": "se"})

    assert first.json() == unread.json() == A_AND_B
    assert read.json() == B_ONLY
    assert len(engine_calls) == 2


@pytest.mark.parametrize(
    ("payload", "reads"),
    [
        pytest.param(
            {"features": [{"strategies": [{"name": "default"}]}]},
            Reads(steady=True),
            id="default-strategy",
        ),
        pytest.param(
            {
                "features": [
                    {
                        "variants": [
                            {"name": "a", "stickiness": "tenant"},
                            {"name": "c", "overrides": [{"contextName": "plan", "values": ["x"]}]},
                        ],
                        "strategies": [
                            {
                                "name": "flexibleRollout",
                                "parameters": {"rollout": "50"},
                                "constraints": [{"contextName": "country"}],
                                "variants": [{"name": "b", "stickiness": "userId"}],
                            },
                            {"name": "remoteAddress", "parameters": {"IPs": "10.0.0.1"}},
                        ],
                    }
                ],
                "segments": [{"id": 1, "constraints": [{"contextName": "region"}]}],
            },
            Reads(
                steady=True,
                fields=("country", "plan", "region", "remoteAddress", "tenant", "userId"),
                by_default=True,
            ),
            id="every-read",
        ),
        pytest.param(
            {"features": [{"strategies": [{"name": "applicationHostname"}]}]},
            Reads(steady=False),
            id="hostname-outside-the-context",
        ),
        pytest.param(
            {
                "features": [
                    {
                        "strategies": [
                            {"name": "flexibleRollout", "parameters": {"stickiness": "random"}}
                        ]
                    }
                ]
            },
            Reads(steady=False),
            id="random",
        ),
    ],
)
def test_reads_of__the_fields_a_state_reads(payload, reads):
    assert reads_of(json.dumps(payload).encode()) == reads


@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param(
            {
                "name": "flexibleRollout",
                "parameters": ROLLOUT_100,
                "constraints": [
                    {
                        "contextName": "currentTime",
                        "operator": "DATE_AFTER",
                        "value": "2020-01-01T00:00:00Z",
                    }
                ],
            },
            id="date-constraint",
        ),
        pytest.param(
            {
                "name": "flexibleRollout",
                "parameters": {"rollout": "50", "stickiness": "random", "groupId": "g"},
            },
            id="random-stickiness",
        ),
    ],
)
def test_answers__state_that_depends_on_more_than_the_context__never_kept(
    admin_client, engine_calls, strategy
):
    make_flag(admin_client, "unsteady", strategy=strategy)
    client = browser()

    for _ in range(3):
        client.get(FRONTEND, {"userId": "1", "sessionId": "s1"})

    assert len(engine_calls) == 3


def test_answers__new_state__answered_anew(admin_client, settings):
    settings.CLIENT_API_REUSE_SECONDS = 0
    make_flag(admin_client, "first")
    make_flag(admin_client, "later", on=False)
    client = browser()
    context = {"userId": "1", "sessionId": "s1"}
    assert client.get(FRONTEND, context).json() == {"toggles": [toggle("first")]}

    response = admin_client.post(
        f"{FEATURES.format(project='default')}/later/environments/development/on",
        content_type="application/json",
    )

    assert response.status_code == 200
    assert client.get(FRONTEND, context).json() == {"toggles": [toggle("first"), toggle("later")]}


def test_answers__token_projects_part_of_the_key(admin_client):
    ProjectFactory(id="shop")
    make_flag(admin_client, "in-default")
    make_flag(admin_client, "in-shop", project="shop")
    context = {"userId": "1", "sessionId": "s1"}

    every = browser().get(FRONTEND, context).json()
    shop = browser(projects=["shop"]).get(FRONTEND, context).json()

    assert every == {"toggles": [toggle("in-default"), toggle("in-shop")]}
    assert shop == {"toggles": [toggle("in-shop")]}


def test_answers__same_request_again__answered_by_its_query(admin_client, settings, monkeypatch):
    settings.CLIENT_API_REUSE_SECONDS = 60
    make_flag(
        admin_client,
        "office",
        strategy={"name": "remoteAddress", "parameters": {"IPs": "10.1.2.3"}},
    )
    client = browser()
    query = {"userId": "1", "sessionId": "s1"}
    client.get(FRONTEND, query)  # the token is looked up: through the view
    client.get(FRONTEND, query, REMOTE_ADDR="10.1.2.3")  # from memory: kept by query too
    read = []
    original = middleware.context_from_query
    monkeypatch.setattr(
        middleware, "context_from_query", lambda items: read.append(1) or original(items)
    )

    from_office = client.get(FRONTEND, query, REMOTE_ADDR="10.1.2.3")
    elsewhere = client.get(FRONTEND, query, REMOTE_ADDR="10.9.9.9")

    assert from_office.json() == {"toggles": [toggle("office")]}
    assert elsewhere.json() == {"toggles": []}
    assert len(read) == 1  # the address had not asked before
