"""A flag's variants per environment over HTTP: getEnvironmentFeatureVariants,
overwriteEnvironmentFeatureVariants (PUT), patchEnvironmentsFeatureVariants (PATCH) and
overwriteFeatureVariantsOnEnvironments (PUT variants-batch), answered as Unleash 8.2 answers them
(bodies, statuses and messages measured on the reference), their audit events, and the client
payload SDKs then get."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from features.models import FeatureEnvironment
from flagadmin.core.models import AuditEvent, TokenType
from tests.conftest import assert_error
from tests.factories import make_token

FEATURES = "/api/admin/projects/default/features"
FLAG = "paint"
BATCH = f"{FEATURES}/{FLAG}/variants-batch"
CLIENT_FEATURES = "/api/client/features"


def variants_url(environment: str = "development", flag: str = FLAG) -> str:
    return f"{FEATURES}/{flag}/environments/{environment}/variants"


def send(client: APIClient, method: str, url: str, body=None):
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


def variable(name: str, weight: int = 0, **fields) -> dict:
    return {"name": name, "weight": weight, "weightType": "variable", **fields}


def fixed(name: str, weight: int, **fields) -> dict:
    return {"name": name, "weight": weight, "weightType": "fix", **fields}


@pytest.fixture
def flag(admin_client) -> str:
    assert send(admin_client, "post", FEATURES, {"name": FLAG}).status_code == 201
    return FLAG


@pytest.fixture
def with_variants(admin_client, flag) -> list[dict]:
    """The flag with variants in development (by the batch, as Unleash 8.2 asks first)."""
    body = {"variants": [variable("blue")], "environments": ["development"]}
    response = send(admin_client, "put", BATCH, body)
    assert response.status_code == 200, response.content
    return [variable("blue", 1000, stickiness="default")]


def stored(environment: str = "development") -> list[dict]:
    return FeatureEnvironment.objects.get(feature_id=FLAG, environment_id=environment).variants


def variant_events() -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(type="feature-environment-variants-updated").order_by("id")
    )


# --- GET --------------------------------------------------------------------------------------


def test_get__none__empty_list(admin_client, flag):
    response = admin_client.get(variants_url())

    assert response.status_code == 200
    assert response.json() == {"version": 1, "variants": []}


def test_get__after_batch__sorted_as_stored(admin_client, flag):
    body = {"variants": [variable("b"), fixed("a", 100)], "environments": ["development"]}
    send(admin_client, "put", BATCH, body)

    response = admin_client.get(variants_url())

    assert response.json() == {
        "version": 1,
        "variants": [
            fixed("a", 100, stickiness="default"),
            variable("b", 900, stickiness="default"),
        ],
    }


def test_get__other_environment__its_own(admin_client, with_variants):
    assert admin_client.get(variants_url("production")).json()["variants"] == []


def test_get__archived_flag__200_as_unleash(admin_client, with_variants):
    assert admin_client.delete(f"{FEATURES}/{FLAG}").status_code == 202

    response = admin_client.get(variants_url())

    assert (response.status_code, response.json()["variants"]) == (200, with_variants)


def test_get__queries_fixed_whatever_the_variants(
    admin_client, flag, django_assert_max_num_queries
):
    many = [variable(f"v{number}") for number in range(50)]
    send(admin_client, "put", BATCH, {"variants": many, "environments": ["development"]})

    # The token's lookup (and now and then its last use), the flag, its variants there.
    with django_assert_max_num_queries(4):
        response = admin_client.get(variants_url())

    assert len(response.json()["variants"]) == 50


def test_get__viewer__200(viewer_client, with_variants):
    assert viewer_client.get(variants_url()).json()["variants"] == with_variants


@pytest.mark.parametrize(
    ("url", "message"),
    [
        pytest.param(
            variants_url("nope"), "Could not find paint in nope", id="unknown-environment"
        ),
        pytest.param(
            variants_url(flag="nope"),
            'There\'s no feature named "nope" in project "default".',
            id="unknown-flag",
        ),
        pytest.param(
            f"/api/admin/projects/other/features/{FLAG}/environments/development/variants",
            'There\'s no feature named "paint" in project "other", but there\'s a feature with '
            'that name in project "default"',
            id="other-project",
        ),
    ],
)
def test_get__not_found__404_as_unleash(admin_client, flag, url, message):
    body = assert_error(admin_client.get(url), 404, "NotFoundError")

    assert body["message"] == message


# --- PUT --------------------------------------------------------------------------------------


def test_put__200_fixed_sorted_stored_and_event(admin_client, with_variants):
    sent = [
        variable("c", 1, stickiness="userId"),
        fixed("a", 100, payload={"type": "json", "value": '{"x": 1}'}),
        variable("b", 1, overrides=[{"contextName": "userId", "values": ["7"]}]),
    ]

    response = send(admin_client, "put", variants_url(), sent)

    expected = [
        fixed("a", 100, payload={"type": "json", "value": '{"x": 1}'}),
        variable("b", 450, overrides=[{"contextName": "userId", "values": ["7"]}]),
        variable("c", 450, stickiness="userId"),
    ]
    assert response.status_code == 200
    assert response.json() == {"version": 1, "variants": expected}
    assert stored() == expected
    event = variant_events()[-1]
    assert (
        event.project,
        event.feature_name,
        event.environment,
        event.created_by,
        event.data,
        event.pre_data,
        event.tags,
    ) == (
        "default",
        FLAG,
        "development",
        "admin-tok",
        {"variants": expected},
        {"variants": with_variants},
        [],
    )


def test_put__remainder_to_the_first_variable_ones_as_sent(admin_client, with_variants):
    sent = [variable("c"), variable("b"), variable("a")]

    response = send(admin_client, "put", variants_url(), sent)

    assert response.json()["variants"] == [
        variable("a", 333),
        variable("b", 333),
        variable("c", 334),
    ]


def test_put__sorted_as_locale_compare(admin_client, with_variants):
    sent = [variable("c"), variable("B"), variable("a")]

    names = [v["name"] for v in send(admin_client, "put", variants_url(), sent).json()["variants"]]

    assert names == ["a", "B", "c"]


def test_put__fix_weights_taking_all__variable_gets_0(admin_client, with_variants):
    sent = [fixed("a", 1000), variable("b", 3)]

    response = send(admin_client, "put", variants_url(), sent)

    assert response.json()["variants"] == [fixed("a", 1000), variable("b", 0)]


def test_put__empty_list__clears_them(admin_client, with_variants):
    response = send(admin_client, "put", variants_url(), [])

    assert response.json() == {"version": 1, "variants": []}
    assert stored() == []


def test_put__names_differing_in_case__two_variants_as_unleash(admin_client, with_variants):
    response = send(admin_client, "put", variants_url(), [variable("a"), variable("A")])

    assert response.json()["variants"] == [variable("a", 500), variable("A", 500)]


def test_put__without_weight_type__variable(admin_client, with_variants):
    # Unleash 8.2 answers 400 "There must be at least one "variable" variant" here: its schema
    # defaults `weightType` to variable, but the service checks the body as sent.
    response = send(admin_client, "put", variants_url(), [{"name": "a", "weight": 500}])

    assert response.status_code == 200
    assert response.json()["variants"] == [variable("a", 1000)]


def test_put__flag_without_variants__403_deprecated_as_unleash(admin_client, flag):
    response = send(admin_client, "put", variants_url(), [variable("a")])

    body = assert_error(response, 403, "InvalidOperationError")
    assert body["message"] == (
        "Environment variants deprecated for feature: paint. Use strategy variants instead."
    )
    assert (stored(), variant_events()) == ([], [])


def test_put__variants_in_another_environment_only__allowed(admin_client, flag):
    body = {"variants": [variable("a")], "environments": ["production"]}
    send(admin_client, "put", BATCH, body)

    response = send(admin_client, "put", variants_url("development"), [variable("b")])

    assert response.status_code == 200


def test_put__unknown_environment__404_nothing_written(admin_client, with_variants):
    before = len(variant_events())

    body = assert_error(
        send(admin_client, "put", variants_url("nope"), [variable("a")]), 404, "NotFoundError"
    )

    assert body["message"] == "Could not find paint in nope"
    assert len(variant_events()) == before


def test_put__archived_flag__404(admin_client, with_variants):
    admin_client.delete(f"{FEATURES}/{FLAG}")

    body = assert_error(
        send(admin_client, "put", variants_url(), [variable("a")]), 404, "NotFoundError"
    )

    assert body["message"] == "Could not find feature toggle with name paint"


def test_put__same_variants_again__no_second_event(admin_client, with_variants):
    send(admin_client, "put", variants_url(), [variable("a")])
    count = len(variant_events())

    response = send(admin_client, "put", variants_url(), [variable("a")])

    assert (response.status_code, len(variant_events())) == (200, count)


LONG_NAME = "a" * 101


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        pytest.param({}, "/body", "The `/body` property must be array. You sent {}.", id="object"),
        pytest.param(
            [{"weight": 1}],
            "/body/0/name",
            "The `/body/0/name` property is required. It was not present on the data you sent.",
            id="no-name",
        ),
        pytest.param(
            [variable("")],
            "/body/0/name",
            'The `/body/0/name` property must NOT have fewer than 1 characters. You sent "".',
            id="empty-name",
        ),
        pytest.param(
            [variable(LONG_NAME)],
            "/body/0/name",
            "The `/body/0/name` property must NOT have more than 100 characters. "
            f'You sent "{LONG_NAME}".',
            id="long-name",
        ),
        pytest.param(
            [variable("a b")],
            "/body/0/name",
            "The `/body/0/name` property must be URL friendly: only the characters "
            'A-Z a-z 0-9 - _ . ! ~ * \' ( ) are allowed. You sent "a b".',
            id="name-not-url-friendly",
        ),
        pytest.param(
            [variable("a"), variable("a")],
            "/body/1/name",
            "The `/body/1/name` property repeats the name of another variant (names are "
            'unique). You sent "a".',
            id="duplicate-name",
        ),
        pytest.param(
            [{"name": "a", "weightType": "variable"}],
            "/body/0/weight",
            "The `/body/0/weight` property is required. It was not present on the data you sent.",
            id="no-weight",
        ),
        pytest.param(
            [variable("a", 1001)],
            "/body/0/weight",
            "The `/body/0/weight` property must be <= 1000. You sent 1001.",
            id="weight-over-1000",
        ),
        pytest.param(
            [variable("a", -1)],
            "/body/0/weight",
            "The `/body/0/weight` property must be >= 0. You sent -1.",
            id="weight-negative",
        ),
        pytest.param(
            [variable("a", 5.5)],
            "/body/0/weight",
            "The `/body/0/weight` property must be integer. You sent 5.5.",
            id="weight-decimal",
        ),
        pytest.param(
            [variable("a", "5")],
            "/body/0/weight",
            'The `/body/0/weight` property must be integer. You sent "5".',
            id="weight-string",
        ),
        pytest.param(
            [{"name": "a", "weight": 1, "weightType": "bogus"}],
            "/body/0/weightType",
            "The `/body/0/weightType` property must be equal to one of the allowed values: "
            '"variable", "fix". You sent "bogus".',
            id="weight-type",
        ),
        pytest.param(
            [fixed("a", 1)],
            "/body",
            'The `/body` property must contain at least one "variable" variant. You sent '
            '[{"name": "a", "weight": 1, "weightType": "fix"}].',
            id="no-variable",
        ),
        pytest.param(
            [fixed("a", 600), fixed("b", 500), variable("c")],
            "/body",
            "The `/body` property must not have fix weights adding up to more than 1000 (the "
            "traffic distribution total must equal 100%). You sent "
            '[{"name": "a", "weight": 600, "weightType": "fix"}, {"name": "b", "weight": 500, '
            '"weightType": "fix"}, {"name": "c", "weight": 0, "weightType": "variable"}].',
            id="fix-over-1000",
        ),
        pytest.param(
            [variable("a", stickiness="")],
            "/body/0/stickiness",
            'The `/body/0/stickiness` property must NOT have fewer than 1 characters. You sent "".',
            id="empty-stickiness",
        ),
        pytest.param(
            [variable("a", stickiness=5)],
            "/body/0/stickiness",
            "The `/body/0/stickiness` property must be string. You sent 5.",
            id="stickiness-number",
        ),
        pytest.param(
            [variable("a", payload=None)],
            "/body/0/payload",
            "The `/body/0/payload` property must be object. You sent null.",
            id="payload-null",
        ),
        pytest.param(
            [variable("a", payload={"type": "string"})],
            "/body/0/payload/value",
            "The `/body/0/payload/value` property is required. It was not present on the data "
            "you sent.",
            id="payload-no-value",
        ),
        pytest.param(
            [variable("a", payload={"type": "string", "value": ""})],
            "/body/0/payload/value",
            "The `/body/0/payload/value` property must NOT have fewer than 1 characters. You "
            'sent "".',
            id="payload-empty",
        ),
        pytest.param(
            [variable("a", payload={"type": "xml", "value": "x"})],
            "/body/0/payload/type",
            "The `/body/0/payload/type` property must be equal to one of the allowed values: "
            '"json", "csv", "string", "number". You sent "xml".',
            id="payload-type",
        ),
        pytest.param(
            [variable("a", payload={"type": "json", "value": "{"})],
            "/body/0/payload/value",
            "The `/body/0/payload/value` property must be a JSON object or array (a string "
            'holding one) when `type` is json. You sent "{".',
            id="payload-not-json",
        ),
        pytest.param(
            [variable("a", payload={"type": "json", "value": "5"})],
            "/body/0/payload/value",
            "The `/body/0/payload/value` property must be a JSON object or array (a string "
            'holding one) when `type` is json. You sent "5".',
            id="payload-json-scalar",
        ),
        # Unleash 8.2 stores this one; an application reading the number then fails.
        pytest.param(
            [variable("a", payload={"type": "number", "value": "abc"})],
            "/body/0/payload/value",
            "The `/body/0/payload/value` property must be a number (a string holding one) when "
            '`type` is number. You sent "abc".',
            id="payload-not-number",
        ),
        pytest.param(
            [variable("a", overrides=None)],
            "/body/0/overrides",
            "The `/body/0/overrides` property must be array. You sent null.",
            id="overrides-null",
        ),
        pytest.param(
            [variable("a", overrides=[{"contextName": "userId"}])],
            "/body/0/overrides/0/values",
            "The `/body/0/overrides/0/values` property is required. It was not present on the "
            "data you sent.",
            id="override-no-values",
        ),
        pytest.param(
            [variable("a", overrides=[{"values": ["x"]}])],
            "/body/0/overrides/0/contextName",
            "The `/body/0/overrides/0/contextName` property is required. It was not present on "
            "the data you sent.",
            id="override-no-context",
        ),
        pytest.param(
            [variable("a", overrides=[{"contextName": "userId", "values": ["x", ""]}])],
            "/body/0/overrides/0/values/1",
            "The `/body/0/overrides/0/values/1` property must NOT have fewer than 1 characters. "
            'You sent "".',
            id="override-empty-value",
        ),
    ],
)
def test_put__invalid__400_nothing_written(admin_client, with_variants, body, path, message):
    before = len(variant_events())

    response = send(admin_client, "put", variants_url(), body)

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [{"path": path, "message": message}]
    assert (stored(), len(variant_events())) == (with_variants, before)


def test_put__unknown_property__ignored_never_stored(admin_client, with_variants):
    # The contract: unknown body fields are ignored (Unleash's schema refuses them with 400).
    response = send(admin_client, "put", variants_url(), [variable("a", extra=1)])

    assert response.json()["variants"] == [variable("a", 1000)]
    assert stored() == [variable("a", 1000)]


# --- PATCH ------------------------------------------------------------------------------------


def test_patch__replace_and_add__200_stored_and_event(admin_client, with_variants):
    patch = [
        {"op": "replace", "path": "/0/weightType", "value": "fix"},
        {"op": "replace", "path": "/0/weight", "value": 200},
        {"op": "add", "path": "/-", "value": variable("green")},
    ]

    response = send(admin_client, "patch", variants_url(), patch)

    expected = [
        fixed("blue", 200, stickiness="default"),
        variable("green", 800),
    ]
    assert response.status_code == 200
    assert response.json() == {"version": 1, "variants": expected}
    assert stored() == expected
    event = variant_events()[-1]
    assert (event.environment, event.data, event.pre_data) == (
        "development",
        {"variants": expected},
        {"variants": with_variants},
    )


def test_patch__remove_all__empty(admin_client, with_variants):
    response = send(admin_client, "patch", variants_url(), [{"op": "remove", "path": "/0"}])

    assert response.json() == {"version": 1, "variants": []}


def test_patch__failed_test__400_nothing_written(admin_client, with_variants):
    patch = [{"op": "test", "path": "/0/name", "value": "red"}, {"op": "remove", "path": "/0"}]

    response = send(admin_client, "patch", variants_url(), patch)

    error = assert_error(response, 400, "ValidationError")
    assert "Could not apply provided patch" in error["message"]
    assert stored() == with_variants


def test_patch__result_invalid__400_naming_the_patched_property(admin_client, with_variants):
    patch = [{"op": "replace", "path": "/0/weight", "value": 2000}]

    error = assert_error(send(admin_client, "patch", variants_url(), patch), 400, "ValidationError")

    assert error["details"] == [
        {
            "path": "/variants/0/weight",
            "message": "The `/variants/0/weight` property must be <= 1000. You sent 2000.",
        }
    ]
    assert stored() == with_variants


def test_patch__duplicate_name__400(admin_client, with_variants):
    patch = [{"op": "add", "path": "/-", "value": variable("blue")}]

    error = assert_error(send(admin_client, "patch", variants_url(), patch), 400, "ValidationError")

    assert error["details"][0]["path"] == "/variants/1/name"


def test_patch__not_a_patch__400(admin_client, with_variants):
    error = assert_error(
        send(admin_client, "patch", variants_url(), [{"op": "nope", "path": "/0"}]),
        400,
        "ValidationError",
    )

    assert error["details"][0]["path"] == "/body/0/op"


def test_patch__flag_without_variants__403_as_unleash(admin_client, flag):
    patch = [{"op": "add", "path": "/-", "value": variable("a")}]

    body = assert_error(
        send(admin_client, "patch", variants_url(), patch), 403, "InvalidOperationError"
    )

    assert body["message"].startswith("Environment variants deprecated for feature: paint.")


def test_patch__unknown_environment__404(admin_client, with_variants):
    patch = [{"op": "remove", "path": "/0"}]

    body = assert_error(
        send(admin_client, "patch", variants_url("nope"), patch), 404, "NotFoundError"
    )

    assert body["message"] == "Could not find paint in nope"


# --- PUT variants-batch -----------------------------------------------------------------------


def test_batch__200_as_sent_with_defaults_and_fixed_weights(admin_client, flag):
    body = {
        "variants": [variable("b"), fixed("a", 100, payload={"type": "string", "value": "x"})],
        "environments": ["production", "development"],
    }

    response = send(admin_client, "put", BATCH, body)

    # As Unleash answers: the order sent, the defaults filled in, the weights as stored.
    assert response.status_code == 200
    assert response.json() == {
        "version": 1,
        "variants": [
            variable("b", 900, stickiness="default"),
            fixed("a", 100, stickiness="default", payload={"type": "string", "value": "x"}),
        ],
    }
    expected = [
        fixed("a", 100, stickiness="default", payload={"type": "string", "value": "x"}),
        variable("b", 900, stickiness="default"),
    ]
    assert stored("development") == stored("production") == expected
    events = variant_events()
    assert [(e.environment, e.data, e.pre_data) for e in events] == [
        ("production", {"variants": expected}, {"variants": []}),
        ("development", {"variants": expected}, {"variants": []}),
    ]
    assert {(e.project, e.feature_name, e.created_by) for e in events} == {
        ("default", FLAG, "admin-tok")
    }


def test_batch__without_variants__clears_them(admin_client, with_variants):
    response = send(admin_client, "put", BATCH, {"environments": ["development"]})

    assert response.json() == {"version": 1, "variants": []}
    assert stored() == []


def test_batch__environment_twice__written_once(admin_client, flag):
    # Unleash 8.2 answers 500 here, after writing both events.
    body = {"variants": [variable("a")], "environments": ["development", "development"]}

    response = send(admin_client, "put", BATCH, body)

    assert response.status_code == 200
    assert [e.environment for e in variant_events()] == ["development"]


def test_batch__unknown_environment__404_nothing_written(admin_client, flag):
    body = {"variants": [variable("a")], "environments": ["development", "nope"]}

    error = assert_error(send(admin_client, "put", BATCH, body), 404, "NotFoundError")

    assert error["message"] == "Could not find paint in nope"
    assert (stored(), variant_events()) == ([], [])


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"variants": []}, "/body/environments", id="no-environments"),
        pytest.param({"variants": [], "environments": []}, "/body/environments", id="empty"),
        pytest.param({"environments": "development"}, "/body/environments", id="not-a-list"),
        pytest.param(
            {"variants": [fixed("a", 1)], "environments": ["development"]},
            "/body/variants",
            id="no-variable",
        ),
        pytest.param(
            {"variants": [variable("a"), variable("a")], "environments": ["development"]},
            "/body/variants/1/name",
            id="duplicate-name",
        ),
        pytest.param(
            {"variants": [variable("a", 1001)], "environments": ["development"]},
            "/body/variants/0/weight",
            id="weight",
        ),
        pytest.param([], "/body", id="array"),
    ],
)
def test_batch__invalid__400(admin_client, flag, body, path):
    error = assert_error(send(admin_client, "put", BATCH, body), 400, "ValidationError")

    assert error["details"][0]["path"] == path
    assert variant_events() == []


def test_batch__unknown_flag__404(admin_client, flag):
    url = f"{FEATURES}/nope/variants-batch"
    body = {"variants": [], "environments": ["development"]}

    error = assert_error(send(admin_client, "put", url, body), 404, "NotFoundError")

    assert error["message"] == 'There\'s no feature named "nope" in project "default".'


# --- who may ----------------------------------------------------------------------------------

WRITES = [
    pytest.param("put", variants_url(), [variable("a")], id="put"),
    pytest.param("patch", variants_url(), [{"op": "remove", "path": "/0"}], id="patch"),
    pytest.param("put", BATCH, {"variants": [], "environments": ["development"]}, id="batch"),
]


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_write__anonymous__401(anon_client, flag, method, url, body):
    assert_error(send(anon_client, method, url, body), 401, "AuthenticationRequired")


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_write__viewer__403_update_feature(viewer_client, flag, method, url, body):
    error = assert_error(send(viewer_client, method, url, body), 403, "NoAccessError")

    assert error["permissions"] == ["UPDATE_FEATURE"]


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_write__client_token__403(client_token_client, flag, method, url, body):
    assert_error(send(client_token_client, method, url, body), 403, "NoAccessError")


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_write__editor__allowed(editor_client, with_variants, method, url, body):
    assert send(editor_client, method, url, body).status_code == 200


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_write__text_body__415(admin_client, flag, method, url, body):
    response = getattr(admin_client, method)(url, json.dumps(body), content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


def test_get__anonymous__401(anon_client, flag):
    assert_error(anon_client.get(variants_url()), 401, "AuthenticationRequired")


def test_get__client_token__403(client_token_client, flag):
    assert_error(client_token_client.get(variants_url()), 403, "NoAccessError")


# --- what SDKs get ----------------------------------------------------------------------------


def client_token_client_of(environment: str) -> APIClient:
    client = APIClient()
    token = make_token(TokenType.CLIENT, projects=["default"], environment=environment)[1]
    client.credentials(HTTP_AUTHORIZATION=token)
    return client


@pytest.fixture
def sdk() -> APIClient:
    return client_token_client_of("development")


def client_flag(response) -> dict:
    return next(f for f in response.json()["features"] if f["name"] == FLAG)


def test_client_payload__put__new_variants_revision_and_etag(admin_client, with_variants, sdk):
    before = sdk.get(CLIENT_FEATURES)

    send(admin_client, "put", variants_url(), [variable("red"), fixed("blue", 300)])
    after = sdk.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=before["ETag"])

    assert client_flag(before)["variants"] == with_variants
    assert after.status_code == 200
    assert after["ETag"] != before["ETag"]
    assert client_flag(after)["variants"] == [fixed("blue", 300), variable("red", 700)]
    assert after.json()["meta"]["revisionId"] > before.json()["meta"]["revisionId"]


def test_client_payload__patch__moves_too(admin_client, with_variants, sdk):
    before = sdk.get(CLIENT_FEATURES)

    send(
        admin_client, "patch", variants_url(), [{"op": "replace", "path": "/0/name", "value": "x"}]
    )
    after = sdk.get(CLIENT_FEATURES)

    assert after["ETag"] != before["ETag"]
    assert client_flag(after)["variants"] == [variable("x", 1000, stickiness="default")]


def test_client_payload__batch__each_environment(admin_client, flag, sdk):
    body = {"variants": [variable("a")], "environments": ["development", "production"]}
    send(admin_client, "put", BATCH, body)
    production = client_token_client_of("production")

    assert client_flag(sdk.get(CLIENT_FEATURES))["variants"] == [
        variable("a", 1000, stickiness="default")
    ]
    assert client_flag(production.get(CLIENT_FEATURES))["variants"] == [
        variable("a", 1000, stickiness="default")
    ]


def test_flag_body__weights_written_as_stored_integers(admin_client, flag):
    # Unleash writes a weight as the integer it stores; DRF's FloatField wrote 1000 as 1000.0.
    send(
        admin_client,
        "put",
        BATCH,
        {"variants": [variable("b"), fixed("a", 100)], "environments": ["development"]},
    )

    response = admin_client.get(f"{FEATURES}/{FLAG}")

    assert response.status_code == 200
    body = response.json()
    expected = [fixed("a", 100, stickiness="default"), variable("b", 900, stickiness="default")]
    assert body["variants"] == expected
    (development,) = [env for env in body["environments"] if env["name"] == "development"]
    assert development["variants"] == expected
    assert b'"weight":100,' in response.content
    assert b'"weight":900,' in response.content
    assert b'"weight":100.0' not in response.content
