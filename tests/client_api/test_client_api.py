"""The client API for SDKs: GET /api/client/features, POST /api/client/register and
POST /api/client/metrics, with client tokens."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from client_api.authentication import forget_tokens
from features.models import (
    ClientInstance,
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureUsageBucket,
    Segment,
)
from flagadmin.core.caches import named
from flagadmin.core.models import TokenType
from projects.models import Project
from tests.conftest import assert_error
from tests.factories import ProjectFactory, make_token

FEATURES = "/api/admin/projects/default/features"
CLIENT_FEATURES = "/api/client/features"


def post(client, url: str, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def sdk(projects: list[str] | None = None, environment: str = "development") -> APIClient:
    client = APIClient()
    token = make_token(TokenType.CLIENT, projects=projects or ["*"], environment=environment)[1]
    client.credentials(HTTP_AUTHORIZATION=token)
    return client


@pytest.fixture
def flag(admin_client) -> str:
    assert post(admin_client, FEATURES, {"name": "checkout", "description": "d"}).status_code == 201
    return "checkout"


def enable(admin_client, name: str, environment: str = "development", project="default"):
    response = admin_client.post(
        f"/api/admin/projects/{project}/features/{name}/environments/{environment}/on",
        content_type="application/json",
    )
    assert response.status_code == 200


# --- GET /api/client/features -------------------------------------------------------------------


def test_client_features__off_flag(flag):
    response = sdk().get(CLIENT_FEATURES)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    etag = response["ETag"]
    assert etag[0] == etag[-1] == '"'
    body = response.json()
    assert body == {
        "version": 2,
        "features": [
            {
                "name": "checkout",
                "type": "release",
                "enabled": False,
                "project": "default",
                "stale": False,
                "strategies": [],
                "variants": [],
                "description": "d",
                "impressionData": False,
            }
        ],
        "query": {"environment": "development", "inlineSegmentConstraints": True},
        "meta": {
            "revisionId": body["meta"]["revisionId"],
            "etag": etag,
            "queryHash": body["meta"]["queryHash"],
        },
    }


def test_client_features__flags_of_an_archived_project_never_served(admin_client, flag):
    # Archiving a project with active flags is refused; a flag that got in anyway (a creation
    # racing the archive) still reaches no SDK.
    ProjectFactory(id="gone")
    post(admin_client, "/api/admin/projects/gone/features", {"name": "left-behind"})
    enable(admin_client, "left-behind", project="gone")
    Project.objects.filter(pk="gone").update(archived_at=timezone.now())

    names = [f["name"] for f in sdk().get(CLIENT_FEATURES).json()["features"]]

    assert names == ["checkout"]


def test_client_features__enabled_with_strategies_in_the_token_environment(admin_client, flag):
    enable(admin_client, flag)
    segment = Segment.objects.create(
        name="beta", constraints=[{"contextName": "region", "operator": "IN", "values": ["eu"]}]
    )
    strategies = f"{FEATURES}/{flag}/environments/development/strategies"
    post(
        admin_client,
        strategies,
        {
            "name": "remoteAddress",
            "parameters": {"IPs": "10.0.0.1"},
            "constraints": [{"contextName": "appName", "operator": "IN", "values": ["shop"]}],
            "segments": [segment.pk],
        },
    )
    post(admin_client, strategies, {"name": "default", "disabled": True})

    development = sdk().get(CLIENT_FEATURES).json()["features"][0]
    production = sdk(environment="production").get(CLIENT_FEATURES).json()["features"][0]

    assert development["enabled"] is True
    assert development["strategies"] == [
        {
            "name": "flexibleRollout",
            "constraints": [],
            "parameters": {"rollout": "100", "groupId": flag, "stickiness": "default"},
            "variants": [],
        },
        {
            "name": "remoteAddress",
            "constraints": [
                {
                    "contextName": "appName",
                    "operator": "IN",
                    "caseInsensitive": False,
                    "inverted": False,
                    "values": ["shop"],
                },
                {"contextName": "region", "operator": "IN", "values": ["eu"]},
            ],
            "parameters": {"IPs": "10.0.0.1"},
            "variants": [],
        },
    ]
    assert (production["enabled"], production["strategies"]) == (False, [])


def test_client_features__dependencies(admin_client, flag):
    post(admin_client, FEATURES, {"name": "child"})
    FeatureDependency.objects.create(
        parent_id=flag, child=Feature.objects.get(pk="child"), variants=["blue"]
    )

    features = {f["name"]: f for f in sdk().get(CLIENT_FEATURES).json()["features"]}

    assert features["child"]["dependencies"] == [
        {"feature": flag, "enabled": True, "variants": ["blue"]}
    ]
    assert "dependencies" not in features[flag]


def test_client_features__filtered_to_the_token_projects(admin_client, flag):
    ProjectFactory(id="other")
    post(admin_client, "/api/admin/projects/other/features", {"name": "elsewhere"})
    post(admin_client, FEATURES, {"name": "archived"})
    admin_client.delete(f"{FEATURES}/archived")

    scoped = sdk(projects=["other"]).get(CLIENT_FEATURES).json()
    every = sdk().get(CLIENT_FEATURES).json()

    assert [f["name"] for f in scoped["features"]] == ["elsewhere"]
    assert scoped["query"] == {
        "environment": "development",
        "inlineSegmentConstraints": True,
        "project": ["other"],
    }
    assert [f["name"] for f in every["features"]] == ["checkout", "elsewhere"]


def test_client_features__if_none_match__304_until_a_change(admin_client, flag):
    client = sdk()
    etag = client.get(CLIENT_FEATURES)["ETag"]

    unchanged = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=etag)
    enable(admin_client, flag)
    changed = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=etag)

    assert unchanged.status_code == 304
    assert unchanged.content == b""
    assert unchanged["ETag"] == etag
    assert changed.status_code == 200
    assert changed["ETag"] != etag
    assert changed.json()["features"][0]["enabled"] is True


@pytest.mark.parametrize(
    "if_none_match",
    [
        "{etag}",
        "W/{etag}",  # as the production stack's nginx hands it out with a gzipped answer
        '"other", W/{etag}',
        "*",
    ],
)
def test_client_features__if_none_match_forms__304(flag, if_none_match):
    client = sdk()
    etag = client.get(CLIENT_FEATURES)["ETag"]

    response = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=if_none_match.format(etag=etag))

    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == etag


@pytest.mark.parametrize("if_none_match", ['"nope"', 'W/"nope"', "", "W/"])
def test_client_features__if_none_match_names_another__200(flag, if_none_match):
    client = sdk()
    full = client.get(CLIENT_FEATURES)

    response = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=if_none_match)

    assert response.status_code == 200
    assert response["ETag"] == full["ETag"]
    assert response.content == full.content
    assert [f["name"] for f in response.json()["features"]] == [flag]


def test_client_features__other_etag__200(flag):
    response = sdk().get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH='"nope"')

    assert response.status_code == 200


def test_client_features__change_without_event_seen_after_max_age(flag):
    client = sdk()
    etag = client.get(CLIENT_FEATURES)["ETag"]
    FeatureEnvironment.objects.filter(feature_id=flag, environment_id="development").update(
        enabled=True
    )

    with override_settings(CLIENT_FEATURES_MAX_AGE=0):
        response = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=etag)

    assert response.status_code == 200
    assert response.json()["features"][0]["enabled"] is True


def test_client_features__rebuilt_without_change__same_etag(flag):
    client = sdk()
    etag = client.get(CLIENT_FEATURES)["ETag"]

    with override_settings(CLIENT_FEATURES_MAX_AGE=0):
        response = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=etag)

    assert response.status_code == 304


def _create_admin_token(admin_client) -> None:
    response = admin_client.post(
        "/api/admin/api-tokens", {"tokenName": "ci", "type": "admin"}, format="json"
    )
    assert response.status_code == 201


def _create_client_token(admin_client) -> None:
    body = {"tokenName": "sdk", "type": "client", "environment": "development"}
    response = admin_client.post("/api/admin/api-tokens", body, format="json")
    assert response.status_code == 201


def _create_flag_in_another_project(admin_client) -> None:
    ProjectFactory(id="other")
    assert (
        post(admin_client, "/api/admin/projects/other/features", {"name": "x"}).status_code == 201
    )


@pytest.mark.parametrize(
    "unrelated_write",
    [
        pytest.param(_create_admin_token, id="admin-token-created"),
        pytest.param(_create_client_token, id="client-token-created"),
        pytest.param(_create_flag_in_another_project, id="flag-outside-the-token-projects"),
    ],
)
def test_client_features__unrelated_audited_write__still_304(admin_client, flag, unrelated_write):
    client = sdk(projects=["default"])
    with override_settings(CLIENT_API_REUSE_SECONDS=0):
        first = client.get(CLIENT_FEATURES)
        unrelated_write(admin_client)

        conditional = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=first["ETag"])
        again = client.get(CLIENT_FEATURES)

    assert conditional.status_code == 304
    assert conditional.content == b""
    assert conditional["ETag"] == first["ETag"]
    assert again["ETag"] == first["ETag"]
    assert again.json()["meta"]["revisionId"] > first.json()["meta"]["revisionId"]
    assert again.json()["features"] == first.json()["features"]


@pytest.mark.parametrize("flags", [1, 25])
def test_client_features__query_count_is_constant(
    admin_client, django_assert_max_num_queries, flags, settings
):
    # On PostgreSQL a body read while any write was in flight on the server (another database's
    # too) is provisional, current for CLIENT_API_REUSE_SECONDS only (0 in tests): the body stays
    # current here, and the token is looked up again for the 304.
    settings.CLIENT_API_REUSE_SECONDS = 60
    for number in range(flags):
        post(admin_client, FEATURES, {"name": f"f{number}"})
        enable(admin_client, f"f{number}")
    client = sdk()

    with django_assert_max_num_queries(8):
        first = client.get(CLIENT_FEATURES)
    forget_tokens()
    with django_assert_max_num_queries(1):
        again = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=first["ETag"])

    assert len(first.json()["features"]) == flags
    assert again.status_code == 304


def test_client_features__token_lookup_reused_for_a_while(
    admin_client, flag, django_assert_num_queries
):
    client = sdk()
    with override_settings(CLIENT_API_REUSE_SECONDS=60):
        etag = client.get(CLIENT_FEATURES)["ETag"]
        enable(admin_client, flag)

        with django_assert_num_queries(0):
            reused = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=etag)

    assert reused.status_code == 304
    assert client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=etag).status_code == 200


@pytest.mark.parametrize("kind", [TokenType.ADMIN, TokenType.PERSONAL])
def test_client_features__not_a_client_token__403(kind, db):
    from tests.factories import UserFactory

    user = UserFactory() if kind == TokenType.PERSONAL else None
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(kind, user=user)[1])

    body = assert_error(client.get(CLIENT_FEATURES), 403, "NoAccessError")

    assert body["message"] == "invalid token: expected a different token type for this endpoint"


def test_client_features__anonymous__401(anon_client):
    assert_error(anon_client.get(CLIENT_FEATURES), 401, "AuthenticationRequired")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"revoked_at": timezone.now()}, id="revoked"),
        pytest.param({"expires_at": timezone.now() - timedelta(seconds=1)}, id="expired"),
    ],
)
def test_client_features__unusable_token__401(db, change):
    token, plaintext = make_token(TokenType.CLIENT, projects=["*"])
    type(token).objects.filter(pk=token.pk).update(**change)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=plaintext)

    assert_error(client.get(CLIENT_FEATURES), 401, "AuthenticationRequired")


def test_client_features__unknown_token__401(anon_client, db):
    anon_client.credentials(HTTP_AUTHORIZATION="*:development.nope")

    assert_error(anon_client.get(CLIENT_FEATURES), 401, "AuthenticationRequired")


def test_client_features__post__405(flag):
    response = post(sdk(), CLIENT_FEATURES, {})

    assert_error(response, 405, "MethodNotAllowedError")


# --- the SDKs' query: tag, project, namePrefix (as Unleash 8.2 reads them, measured) --------


@pytest.fixture
def catalogue(admin_client) -> None:
    """Flags `checkout` (tag simple:red), `checkout-v2` (simple:blue), `Checkout-old`, and
    `search` in project `other` (simple:red)."""
    ProjectFactory(id="other")
    for project, name, tags in [
        ("default", "checkout", [{"type": "simple", "value": "red"}]),
        ("default", "checkout-v2", [{"type": "simple", "value": "blue"}]),
        ("default", "Checkout-old", []),
        ("other", "search", [{"type": "simple", "value": "red"}]),
    ]:
        response = post(
            admin_client, f"/api/admin/projects/{project}/features", {"name": name, "tags": tags}
        )
        assert response.status_code == 201, response.content


@pytest.mark.parametrize(
    ("query", "names", "echoed"),
    [
        pytest.param(
            "?namePrefix=checkout",
            ["checkout", "checkout-v2"],
            {"namePrefix": "checkout"},
            id="name-prefix-case-sensitive",
        ),
        pytest.param(
            "?project=other", ["search"], {"project": ["other"]}, id="project-narrows-every"
        ),
        pytest.param(
            "?project=other&project=default&project=other",
            ["Checkout-old", "checkout", "checkout-v2", "search"],
            {"project": ["other", "default", "other"]},
            id="projects-repeated",
        ),
        pytest.param(
            "?tag=simple:red",
            ["checkout", "search"],
            {"tag": [["simple", "red"]]},
            id="tag",
        ),
        pytest.param(
            "?tag=simple:red&tag=simple:blue&namePrefix=check&project=default",
            ["checkout", "checkout-v2"],
            {
                "tag": [["simple", "red"], ["simple", "blue"]],
                "project": ["default"],
                "namePrefix": "check",
            },
            id="all-three",
        ),
        pytest.param("?tag=simple:nothing", [], {"tag": [["simple", "nothing"]]}, id="tag-no-flag"),
        pytest.param(
            "?project=*",
            ["Checkout-old", "checkout", "checkout-v2", "search"],
            {"project": ["*"]},
            id="project-every",
        ),
        pytest.param(
            "?environment=production&inlineSegmentConstraints=false&other=1",
            ["Checkout-old", "checkout", "checkout-v2", "search"],
            {},
            id="others-ignored",
        ),
    ],
)
def test_client_features__query_narrows(catalogue, query, names, echoed):
    response = sdk().get(CLIENT_FEATURES + query)

    assert response.status_code == 200
    body = response.json()
    assert [flag["name"] for flag in body["features"]] == names
    # Unleash's keys in Unleash's order.
    assert list(body["query"].items()) == [
        *echoed.items(),
        ("environment", "development"),
        ("inlineSegmentConstraints", True),
    ]
    assert response["ETag"] == body["meta"]["etag"]
    if echoed:
        assert response["ETag"] != sdk().get(CLIENT_FEATURES)["ETag"]


def test_client_features__project_query__token_projects_stand(catalogue):
    body = sdk(projects=["default"]).get(CLIENT_FEATURES + "?project=other").json()

    assert [flag["name"] for flag in body["features"]] == [
        "Checkout-old",
        "checkout",
        "checkout-v2",
    ]
    assert body["query"]["project"] == ["default"]


def test_client_features__narrowed_304_until_a_change(admin_client, catalogue):
    client = sdk()
    first = client.get(CLIENT_FEATURES + "?namePrefix=checkout")

    unchanged = client.get(
        CLIENT_FEATURES + "?namePrefix=checkout", HTTP_IF_NONE_MATCH=first["ETag"]
    )
    enable(admin_client, "checkout-v2")
    changed = client.get(CLIENT_FEATURES + "?namePrefix=checkout", HTTP_IF_NONE_MATCH=first["ETag"])

    assert unchanged.status_code == 304
    assert changed.status_code == 200
    assert [flag["enabled"] for flag in changed.json()["features"]] == [False, True]


@pytest.mark.parametrize(
    ("query", "details"),
    [
        pytest.param(
            "?tag=red",
            [
                (
                    "/query/tag/0",
                    'The `/query/tag/0` property must be a tag as `type:value`. You sent "red".',
                )
            ],
            id="tag-without-type",
        ),
        pytest.param(
            "?tag=simple:red&tag=:x",
            [
                (
                    "/query/tag/1",
                    'The `/query/tag/1` property must be a tag as `type:value`. You sent ":x".',
                )
            ],
            id="second-tag",
        ),
        pytest.param(
            "?project=no%20spaces",
            [
                (
                    "/query/project/0",
                    "The `/query/project/0` property must be URL friendly: only the characters "
                    'A-Z a-z 0-9 - _ . ! ~ * \' ( ) are allowed. You sent "no spaces".',
                )
            ],
            id="project-not-url-friendly",
        ),
        pytest.param(
            "?namePrefix=",
            [
                (
                    "/query/namePrefix",
                    "The `/query/namePrefix` property must NOT have fewer than 1 "
                    'characters. You sent "".',
                )
            ],
            id="empty-prefix",
        ),
        pytest.param(
            "?namePrefix=a&namePrefix=b&tag=x",
            [
                (
                    "/query/tag/0",
                    'The `/query/tag/0` property must be a tag as `type:value`. You sent "x".',
                ),
                (
                    "/query/namePrefix",
                    'The `/query/namePrefix` property must be string. You sent ["a", "b"].',
                ),
            ],
            id="two-prefixes-and-a-bad-tag",
        ),
    ],
)
def test_client_features__query_refused__400(flag, query, details):
    body = assert_error(sdk().get(CLIENT_FEATURES + query), 400, "ValidationError")

    assert body == {
        "id": body["id"],
        "name": "ValidationError",
        "message": " ".join(message for _, message in details),
        "details": [{"path": path, "message": message} for path, message in details],
    }


@pytest.fixture
def kept_bodies():
    """The client payload bodies this worker keeps (a declared cache), its bounds restored
    after the test."""
    cache = named("client payload bodies")
    declared = {"max_entries": cache.max_entries, "max_bytes": cache.max_bytes}
    yield cache
    cache.rebound(**declared)


def _kept_prefixes(kept_bodies) -> list[str | None]:
    return [key[2].name_prefix for key in kept_bodies]


def test_client_features__kept_bodies_bounded_in_number__oldest_go(catalogue, kept_bodies):
    kept_bodies.rebound(max_entries=2)
    client = sdk()
    for prefix in ["c", "ch", "che", "chec"]:
        assert client.get(f"{CLIENT_FEATURES}?namePrefix={prefix}").status_code == 200

    assert _kept_prefixes(kept_bodies) == ["che", "chec"]


def test_client_features__kept_bodies_bounded_in_bytes(catalogue, kept_bodies):
    client = sdk()
    size = len(client.get(f"{CLIENT_FEATURES}?namePrefix=checkout").content)
    kept_bodies.clear()
    kept_bodies.rebound(max_bytes=2 * size + 10)
    # Prefixes of one length, naming the same flags: bodies of one size.
    for prefix in ["checkout", "Checkout", "checkouT"]:
        assert client.get(f"{CLIENT_FEATURES}?namePrefix={prefix}").status_code == 200

    assert _kept_prefixes(kept_bodies) == ["Checkout", "checkouT"]
    assert kept_bodies.size == sum(len(kept.body) for kept in kept_bodies.values())


def test_client_features__body_over_the_bound__served_not_kept(catalogue, kept_bodies):
    kept_bodies.rebound(max_bytes=10)

    response = sdk().get(CLIENT_FEATURES)

    assert response.status_code == 200
    assert len(response.json()["features"]) == 4
    assert (len(kept_bodies), kept_bodies.size) == (0, 0)


# --- GET /api/client/features/:featureName -----------------------------------------------------


def test_client_feature__one_flag_as_in_the_list(admin_client, catalogue):
    enable(admin_client, "checkout")
    client = sdk()

    response = client.get(f"{CLIENT_FEATURES}/checkout")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    listed = client.get(CLIENT_FEATURES).json()["features"]
    assert response.json() == next(flag for flag in listed if flag["name"] == "checkout")
    assert response.json()["enabled"] is True


@pytest.mark.parametrize(
    ("name", "projects"),
    [
        pytest.param("nope", None, id="no-such-flag"),
        pytest.param("checkou", None, id="a-prefix-is-not-the-flag"),
        pytest.param("search", ["default"], id="another-project-than-the-token"),
        pytest.param("archived", None, id="archived"),
    ],
)
def test_client_feature__not_there__404(admin_client, catalogue, name, projects):
    post(admin_client, FEATURES, {"name": "archived"})
    admin_client.delete(f"{FEATURES}/archived")

    body = assert_error(
        sdk(projects=projects).get(f"{CLIENT_FEATURES}/{name}"), 404, "NotFoundError"
    )

    assert body["message"] == f"Could not find feature flag {name}"


def test_client_feature__admin_token__403(admin_client, flag):
    assert_error(admin_client.get(f"{CLIENT_FEATURES}/{flag}"), 403, "NoAccessError")


# --- POST /api/client/register ---------------------------------------------------------------


REGISTRATION = {
    "appName": "shop",
    "instanceId": "shop-1",
    "sdkVersion": "unleash-client-python:6.9.1",
    "strategies": ["default", "flexibleRollout"],
    "started": "2026-11-23T09:00:00Z",
    "interval": 15000,
}


def test_register__202_instance_remembered(db):
    response = post(sdk(), "/api/client/register", REGISTRATION)

    assert response.status_code == 202
    assert response.content == b""
    instance = ClientInstance.objects.get()
    assert (
        instance.app_name,
        instance.instance_id,
        instance.environment,
        instance.sdk_version,
        instance.strategies,
        instance.interval,
        instance.started_at,
    ) == (
        "shop",
        "shop-1",
        "development",
        REGISTRATION["sdkVersion"],
        ["default", "flexibleRollout"],
        15000,
        datetime(2026, 11, 23, 9, 0, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("started", "expected"),
    [
        pytest.param(
            "2026-11-23T10:00:00+01:00", datetime(2026, 11, 23, 9, 0, tzinfo=UTC), id="offset"
        ),
        pytest.param(
            "2026-11-23T09:00:00", datetime(2026, 11, 23, 9, 0, tzinfo=UTC), id="naive-utc"
        ),
        pytest.param(1795424400, datetime(2026, 11, 23, 9, 0, tzinfo=UTC), id="unix-seconds"),
        pytest.param(1795424400000, datetime(2026, 11, 23, 9, 0, tzinfo=UTC), id="unix-ms"),
        pytest.param("yesterday", None, id="not-a-date"),
        pytest.param(True, None, id="boolean"),
        pytest.param(10**30, None, id="out-of-range"),
        pytest.param("9999-12-31T23:00:00-05:00", None, id="past-year-9999-in-utc"),
        pytest.param("0001-01-01T00:00:00+05:00", None, id="before-year-1-in-utc"),
    ],
)
def test_register__started__kept_as_utc_time(db, started, expected):
    response = post(sdk(), "/api/client/register", {**REGISTRATION, "started": started})

    assert response.status_code == 202
    assert ClientInstance.objects.get().started_at == expected


def test_register__again__one_instance(db):
    client = sdk()
    post(client, "/api/client/register", REGISTRATION)

    post(client, "/api/client/register", {**REGISTRATION, "sdkVersion": "x:2"})

    assert list(ClientInstance.objects.values_list("sdk_version", flat=True)) == ["x:2"]


@pytest.mark.parametrize("missing", ["appName", "interval", "started", "strategies"])
def test_register__missing_field__400(db, missing):
    body = {key: value for key, value in REGISTRATION.items() if key != missing}

    error = assert_error(post(sdk(), "/api/client/register", body), 400, "ValidationError")

    assert error["details"][0]["path"] == f"/body/{missing}"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("interval", -1, "The `/body/interval` property must be >= 0. You sent -1."),
        ("interval", 1.5, "The `/body/interval` property must be integer. You sent 1.5."),
        ("interval", None, "The `/body/interval` property must be integer. You sent null."),
        (
            "started",
            None,
            "The `/body/started` property must be a date-time or a number. You sent null.",
        ),
    ],
)
def test_register__invalid__400_sentence_naming_the_property(db, field, value, message):
    response = post(sdk(), "/api/client/register", {**REGISTRATION, field: value})

    body = assert_error(response, 400, "ValidationError")
    assert body == {
        "id": body["id"],
        "name": "ValidationError",
        "message": message,
        "details": [{"path": f"/body/{field}", "message": message}],
    }


def test_register__admin_token__403(admin_client):
    assert_error(post(admin_client, "/api/client/register", REGISTRATION), 403, "NoAccessError")


def test_register__not_json__415(db):
    response = sdk().generic("POST", "/api/client/register", "{}", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


# --- POST /api/client/metrics ------------------------------------------------------------------


def metrics(toggles: dict, app: str = "shop") -> dict:
    return {
        "appName": app,
        "instanceId": "shop-1",
        "bucket": {
            "start": "2026-11-23T09:00:00Z",
            "stop": "2026-11-23T09:01:00Z",
            "toggles": toggles,
        },
    }


def _project_usage(admin_client) -> str | None:
    projects = admin_client.get("/api/admin/projects").json()["projects"]
    return next(p for p in projects if p["id"] == "default")["lastReportedFlagUsage"]


def test_metrics__202_counts_last_seen_and_project_usage(admin_client, flag):
    assert _project_usage(admin_client) is None

    response = post(sdk(), "/api/client/metrics", metrics({flag: {"yes": 3, "no": 1}}))

    assert response.status_code == 202
    assert response.content == b""
    bucket = FeatureUsageBucket.objects.get()
    assert (bucket.feature_name, bucket.environment, bucket.app_name, bucket.yes, bucket.no) == (
        flag,
        "development",
        "shop",
        3,
        1,
    )
    assert bucket.hour.minute == bucket.hour.second == 0
    seen = Feature.objects.get(pk=flag).last_seen_at
    assert seen is not None
    assert (
        FeatureEnvironment.objects.get(feature_id=flag, environment_id="development").last_seen_at
        == seen
    )
    assert (
        FeatureEnvironment.objects.get(feature_id=flag, environment_id="production").last_seen_at
        is None
    )
    assert _project_usage(admin_client) == seen.isoformat().replace("+00:00", "Z")
    detail = admin_client.get(f"{FEATURES}/{flag}").json()
    development = next(e for e in detail["environments"] if e["name"] == "development")
    assert development["lastSeenAt"] == _project_usage(admin_client)


def test_metrics__reports_add_up_in_the_hour_bucket(flag):
    client = sdk()
    post(client, "/api/client/metrics", metrics({flag: {"yes": 3, "no": 1}}))

    post(client, "/api/client/metrics", metrics({flag: {"yes": 2, "no": 5}}))

    assert list(FeatureUsageBucket.objects.values_list("yes", "no")) == [(5, 6)]


def test_metrics__counts_as_numeric_strings__taken_as_unleash_takes_them(flag):
    response = post(sdk(), "/api/client/metrics", metrics({flag: {"yes": "3", "no": " 1"}}))

    assert response.status_code == 202
    assert list(FeatureUsageBucket.objects.values_list("yes", "no")) == [(3, 1)]


def test_metrics__count_of_thousands_of_digits__400_not_500(flag):
    # int() refuses strings past 4,300 digits; such a count is no count either way.
    response = post(sdk(), "/api/client/metrics", metrics({flag: {"yes": "9" * 5000, "no": 1}}))

    error = assert_error(response, 400, "ValidationError")
    assert error["details"][0]["path"] == f"/body/bucket/toggles/{flag}/yes"
    assert not FeatureUsageBucket.objects.exists()


def test_metrics__last_seen_written_only_when_it_moves_enough(flag):
    client = sdk()
    post(client, "/api/client/metrics", metrics({flag: {"yes": 1, "no": 0}}))
    first = Feature.objects.get(pk=flag).last_seen_at

    post(client, "/api/client/metrics", metrics({flag: {"yes": 1, "no": 0}}))

    assert Feature.objects.get(pk=flag).last_seen_at == first


def test_metrics__unknown_archived_and_other_project_flags_ignored(admin_client, flag):
    ProjectFactory(id="other")
    post(admin_client, "/api/admin/projects/other/features", {"name": "elsewhere"})
    post(admin_client, FEATURES, {"name": "gone"})
    admin_client.delete(f"{FEATURES}/gone")
    toggles = {name: {"yes": 1, "no": 1} for name in (flag, "elsewhere", "gone", "nope")}

    response = post(sdk(projects=["default"]), "/api/client/metrics", metrics(toggles))

    assert response.status_code == 202
    assert list(FeatureUsageBucket.objects.values_list("feature_name", flat=True)) == [flag]
    assert Feature.objects.get(pk="elsewhere").last_seen_at is None


def test_metrics__without_bucket__202_nothing_recorded(flag):
    response = post(sdk(), "/api/client/metrics", {"appName": "shop"})

    assert response.status_code == 202
    assert not FeatureUsageBucket.objects.exists()


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"instanceId": "i"}, "/body/appName", id="no-app-name"),
        pytest.param(
            metrics({"checkout": {"yes": -1}}), "/body/bucket/toggles/checkout/yes", id="negative"
        ),
        pytest.param(
            metrics({"checkout": {"yes": "x"}}),
            "/body/bucket/toggles/checkout/yes",
            id="string-count-not-a-number",
        ),
        pytest.param(
            {"appName": "a", "bucket": {"start": 1}}, "/body/bucket/toggles", id="no-toggles"
        ),
        pytest.param({"appName": ""}, "/body/appName", id="blank-app-name"),
        pytest.param({"appName": 5}, "/body/appName", id="app-name-number"),
        pytest.param({"appName": "a", "bucket": []}, "/body/bucket", id="bucket-list"),
        pytest.param(
            {"appName": "a", "bucket": {"toggles": {"x": 1}}},
            "/body/bucket/toggles/x",
            id="toggle-not-object",
        ),
        pytest.param(
            metrics({"checkout": {"no": True}}), "/body/bucket/toggles/checkout/no", id="bool"
        ),
        pytest.param([], "/body", id="body-list"),
    ],
)
def test_metrics__invalid__400(flag, body, path):
    error = assert_error(post(sdk(), "/api/client/metrics", body), 400, "ValidationError")

    assert path in [detail["path"] for detail in error["details"]]
    assert not FeatureUsageBucket.objects.exists()


MAX_COUNT = 2**31 - 1
BIGINT_MAX = 2**63 - 1


def _over_max(path: str, sent: int) -> dict:
    message = f"The `{path}` property must be <= {MAX_COUNT}. You sent {sent}."
    return {"path": path, "message": message}


@pytest.mark.parametrize(
    ("toggle", "details"),
    [
        pytest.param(
            {"yes": MAX_COUNT + 1},
            [_over_max("/body/bucket/toggles/checkout/yes", MAX_COUNT + 1)],
            id="yes-int32-plus-one",
        ),
        pytest.param(
            {"no": BIGINT_MAX},
            [_over_max("/body/bucket/toggles/checkout/no", BIGINT_MAX)],
            id="no-bigint-max",
        ),
        pytest.param(
            {"yes": 10**30, "no": 10**30},
            [
                _over_max("/body/bucket/toggles/checkout/yes", 10**30),
                _over_max("/body/bucket/toggles/checkout/no", 10**30),
            ],
            id="beyond-bigint",
        ),
    ],
)
def test_metrics__count_over_int32__400_whole_body_nothing_recorded(flag, toggle, details):
    response = post(sdk(), "/api/client/metrics", metrics({flag: toggle}))

    error = assert_error(response, 400, "ValidationError")
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": " ".join(detail["message"] for detail in details),
        "details": details,
    }
    assert not FeatureUsageBucket.objects.exists()


@pytest.mark.parametrize(
    ("toggle", "expected"),
    [
        pytest.param({"yes": MAX_COUNT}, (2 * MAX_COUNT, 0), id="yes-at-max"),
        pytest.param({"no": MAX_COUNT}, (0, 2 * MAX_COUNT), id="no-at-max"),
    ],
)
def test_metrics__count_at_max_twice__202_summed(flag, toggle, expected):
    client = sdk()

    responses = [post(client, "/api/client/metrics", metrics({flag: toggle})) for _ in "12"]

    assert [r.status_code for r in responses] == [202, 202]
    assert list(FeatureUsageBucket.objects.values_list("yes", "no")) == [expected]


@pytest.mark.parametrize(
    ("before", "toggle", "expected"),
    [
        pytest.param((BIGINT_MAX - 1, 0), {"yes": MAX_COUNT}, (BIGINT_MAX, 0), id="yes"),
        pytest.param((5, BIGINT_MAX), {"yes": 1, "no": 1}, (6, BIGINT_MAX), id="no-full"),
    ],
)
def test_metrics__bucket_sum_saturates_at_bigint_max(flag, before, toggle, expected):
    client = sdk()
    assert post(client, "/api/client/metrics", metrics({flag: {"yes": 1}})).status_code == 202
    FeatureUsageBucket.objects.update(yes=before[0], no=before[1])

    response = post(client, "/api/client/metrics", metrics({flag: toggle}))

    assert response.status_code == 202
    assert list(FeatureUsageBucket.objects.values_list("yes", "no")) == [expected]


def test_metrics__admin_token__403(admin_client):
    response = post(admin_client, "/api/client/metrics", metrics({}))

    assert_error(response, 403, "NoAccessError")


def test_metrics__anonymous__401(anon_client):
    assert_error(
        post(anon_client, "/api/client/metrics", metrics({})), 401, "AuthenticationRequired"
    )


def test_metrics__invalid__whole_error_body(flag):
    body = metrics({"checkout": {"yes": -1, "no": "two"}})

    error = assert_error(post(sdk(), "/api/client/metrics", body), 400, "ValidationError")

    assert error["details"] == [
        {
            "path": "/body/bucket/toggles/checkout/yes",
            "message": "The `/body/bucket/toggles/checkout/yes` property must be >= 0. "
            "You sent -1.",
        },
        {
            "path": "/body/bucket/toggles/checkout/no",
            "message": "The `/body/bucket/toggles/checkout/no` property must be integer. "
            'You sent "two".',
        },
    ]


def test_metrics__last_seen_cannot_be_written__202_and_counted_once(flag, monkeypatch, caplog):
    # The counts are committed before last_seen is written: a 503 then would have the SDK send
    # the report again, and count it twice.
    from django.db import OperationalError

    from features import metrics_services

    def unavailable(*args, **kwargs):
        raise OperationalError("canceling statement due to statement timeout")

    monkeypatch.setattr(metrics_services, "_advance_last_seen", unavailable)

    response = post(sdk(), "/api/client/metrics", metrics({flag: {"yes": 3, "no": 1}}))

    assert response.status_code == 202
    assert response.content == b""
    bucket = FeatureUsageBucket.objects.get()
    assert (bucket.yes, bucket.no) == (3, 1)
    assert Feature.objects.get(pk=flag).last_seen_at is None
    assert "last_seen not written for 1 flags" in caplog.text
