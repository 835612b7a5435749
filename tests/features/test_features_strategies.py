"""The strategies of a flag in an environment: addFeatureStrategy, getFeatureStrategies,
getFeatureStrategy, updateFeatureStrategy, deleteFeatureStrategy."""

from __future__ import annotations

import json
import uuid

import pytest

from features.models import FeatureStrategy, FeatureStrategySegment, Segment
from flagadmin.core.models import AuditEvent
from tests.conftest import assert_error
from tests.factories import ProjectRoleAssignmentFactory

FEATURES = "/api/admin/projects/default/features"
STRATEGIES = f"{FEATURES}/checkout/environments/development/strategies"


def post(client, url: str, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def put(client, url: str, body):
    return client.put(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def flag(admin_client) -> str:
    assert post(admin_client, FEATURES, {"name": "checkout"}).status_code == 201
    return "checkout"


def _strategy_body(strategy_id: str, **fields) -> dict:
    body = {
        "id": strategy_id,
        "name": "default",
        "title": None,
        "disabled": False,
        "featureName": "checkout",
        "sortOrder": 0,
        "segments": [],
        "constraints": [],
        "variants": [],
        "parameters": {},
    }
    body.update(fields)
    return body


# --- add ---------------------------------------------------------------------------------------


def test_add_strategy__200_whole_strategy_and_event(admin_client, flag):
    body = {
        "name": "remoteAddress",
        "title": "Office",
        "parameters": {"IPs": "10.0.0.1,10.0.0.2"},
        "constraints": [
            {"contextName": "appName", "operator": "IN", "values": ["shop"]},
            {"contextName": "version", "operator": "SEMVER_GTE", "value": "1.2.0"},
        ],
        "variants": [
            {"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "default"}
        ],
    }

    response = post(admin_client, STRATEGIES, body)

    assert response.status_code == 200
    strategy_id = response.json()["id"]
    uuid.UUID(strategy_id)
    expected = _strategy_body(
        strategy_id,
        name="remoteAddress",
        title="Office",
        parameters={"IPs": "10.0.0.1,10.0.0.2"},
        constraints=[
            {
                "contextName": "appName",
                "operator": "IN",
                "caseInsensitive": False,
                "inverted": False,
                "values": ["shop"],
            },
            {
                "contextName": "version",
                "operator": "SEMVER_GTE",
                "caseInsensitive": False,
                "inverted": False,
                "value": "1.2.0",
            },
        ],
        variants=[
            {"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "default"}
        ],
    )
    assert response.json() == expected
    event = AuditEvent.objects.get(type="feature-strategy-add")
    assert (event.feature_name, event.environment, event.project, event.created_by) == (
        "checkout",
        "development",
        "default",
        "admin-tok",
    )
    assert event.data["id"] == strategy_id
    assert event.data["parameters"] == {"IPs": "10.0.0.1,10.0.0.2"}


def test_add_strategy__sort_order_after_the_last(admin_client, flag):
    post(admin_client, STRATEGIES, {"name": "default", "sortOrder": 4})

    response = post(admin_client, STRATEGIES, {"name": "default"})

    assert response.json()["sortOrder"] == 5


def test_add_strategy__flexible_rollout_defaults_filled_in(admin_client, flag):
    response = post(admin_client, STRATEGIES, {"name": "flexibleRollout"})

    assert response.json()["parameters"] == {
        "rollout": "100",
        "groupId": "checkout",
        "stickiness": "default",
    }


def test_add_strategy__segments(admin_client, flag):
    segment = Segment.objects.create(name="beta")

    response = post(admin_client, STRATEGIES, {"name": "default", "segments": [segment.pk]})

    assert response.json()["segments"] == [segment.pk]
    assert FeatureStrategySegment.objects.get().segment_id == segment.pk


def test_add_strategy__unknown_segment__400_nothing_written(admin_client, flag):
    response = post(admin_client, STRATEGIES, {"name": "default", "segments": [999]})

    body = assert_error(response, 400, "ValidationError")
    assert body["details"][0]["path"] == "/body/segments"
    assert not FeatureStrategy.objects.exists()
    assert not AuditEvent.objects.filter(type="feature-strategy-add").exists()


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({}, "/body/name", id="no-name"),
        pytest.param({"name": "gradualRolloutRandom"}, "/body/name", id="unknown-strategy"),
        # Unleash 8.2 has no userWithId any more (measured: 400 "Could not find strategy type
        # with name userWithId"); SDKs still evaluate the ones stored before.
        pytest.param({"name": "userWithId"}, "/body/name", id="user-with-id-retired"),
        pytest.param({"name": 5}, "/body/name", id="name-not-string"),
        pytest.param(
            {"name": "default", "parameters": {"a": True}}, "/body/parameters/a", id="param-boolean"
        ),
        pytest.param(
            {"name": "default", "parameters": {"a": {}}}, "/body/parameters/a", id="param-object"
        ),
        pytest.param({"name": "default", "parameters": []}, "/body/parameters", id="params-list"),
        pytest.param(
            {"name": "flexibleRollout", "parameters": {"rollout": "101"}},
            "/body/parameters/rollout",
            id="rollout-over-100",
        ),
        pytest.param(
            {"name": "default", "constraints": [{"contextName": "x", "operator": "XX"}]},
            "/body/constraints/0/operator",
            id="unknown-operator",
        ),
        pytest.param(
            {"name": "default", "constraints": [{"operator": "IN"}]},
            "/body/constraints/0/contextName",
            id="constraint-without-context",
        ),
        pytest.param({"name": "default", "disabled": "yes"}, "/body/disabled", id="disabled"),
        pytest.param({"name": "default", "sortOrder": "1"}, "/body/sortOrder", id="sort-order"),
        pytest.param(
            {"name": "default", "variants": [{"name": "a", "weight": 2000}]},
            "/body/variants/0/weight",
            id="variant-weight",
        ),
    ],
)
def test_add_strategy__invalid__400(admin_client, flag, body, path):
    response = post(admin_client, STRATEGIES, body)

    error = assert_error(response, 400, "ValidationError")
    assert path in [detail["path"] for detail in error["details"]]
    assert not FeatureStrategy.objects.exists()


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _one_detail(path: str, message: str) -> dict:
    message = f"The `{path}` property {message}"
    return {"path": path, "message": message}


OUT_OF_COLUMN = [
    pytest.param(
        {"title": "t" * 256},
        _one_detail(
            "/body/title", f'must NOT have more than 255 characters. You sent "{"t" * 256}".'
        ),
        id="title-256-chars",
    ),
    pytest.param(
        {"sortOrder": INT32_MAX + 1},
        _one_detail("/body/sortOrder", f"must be <= {INT32_MAX}. You sent {INT32_MAX + 1}."),
        id="sort-order-int32-max-plus-one",
    ),
    pytest.param(
        {"sortOrder": INT32_MIN - 1},
        _one_detail("/body/sortOrder", f"must be >= {INT32_MIN}. You sent {INT32_MIN - 1}."),
        id="sort-order-int32-min-minus-one",
    ),
]


# Constraints Unleash 8.2 refuses (measured: 400 BadDataError there), which SDKs would get.
def _constraint(operator: str, **fields) -> dict:
    return {"contextName": "userId", "operator": operator, **fields}


REFUSED_CONSTRAINTS = [
    pytest.param(
        _constraint("NUM_GT", value="abc"), "value", 'must be a number. You sent "abc".', id="num"
    ),
    pytest.param(
        _constraint("NUM_EQ"),
        "value",
        "must not be empty: the operator NUM_EQ compares against it.",
        id="num-no-value",
    ),
    pytest.param(
        _constraint("DATE_AFTER", value="yesterday"),
        "value",
        'must be an ISO date or date-time. You sent "yesterday".',
        id="date",
    ),
    pytest.param(
        _constraint("DATE_BEFORE", value="2026-13-01"),
        "value",
        'must be an ISO date or date-time. You sent "2026-13-01".',
        id="date-out-of-range",
    ),
    pytest.param(
        _constraint("SEMVER_GT", value="x.y"),
        "value",
        'must be a semantic version, e.g. 1.2.3 or 2.0.0-beta.1. You sent "x.y".',
        id="semver",
    ),
    pytest.param(
        _constraint("SEMVER_LT", value="v1.2.3"),
        "value",
        'must be a semantic version, e.g. 1.2.3 or 2.0.0-beta.1. You sent "v1.2.3".',
        id="semver-not-canonical",
    ),
    pytest.param(
        _constraint("IN"), "values", "must NOT have fewer than 1 items.", id="in-no-values"
    ),
    pytest.param(
        _constraint("NOT_IN", values=[]),
        "values",
        "must NOT have fewer than 1 items. You sent [].",
        id="not-in-empty",
    ),
    pytest.param(
        _constraint("STR_CONTAINS", value="a"),
        "values",
        "must NOT have fewer than 1 items.",
        id="str-contains-value-only",
    ),
    pytest.param(
        _constraint("IN", values=["a", ""]),
        "values/1",
        'must NOT have fewer than 1 characters. You sent "".',
        id="in-empty-value",
    ),
    pytest.param(
        _constraint("REGEX", value="(unclosed"),
        "value",
        'must be a regular expression (RE2 syntax). You sent "(unclosed".',
        id="regex",
    ),
    pytest.param(
        _constraint("REGEX", value=""),
        "value",
        'must be a regular expression (RE2 syntax). You sent "".',
        id="regex-empty",
    ),
    pytest.param(
        _constraint("REGEX", value="(?=a)b"),
        "value",
        'must be a regular expression (RE2 syntax). You sent "(?=a)b".',
        id="regex-lookahead-not-re2",
    ),
    pytest.param(
        _constraint("REGEX", value="(a)\\1"),
        "value",
        'must be a regular expression (RE2 syntax). You sent "(a)\\\\1".',
        id="regex-backreference-not-re2",
    ),
    pytest.param(
        _constraint("DATE_AFTER", value="2024-W01-1"),
        "value",
        'must be an ISO date or date-time. You sent "2024-W01-1".',
        id="date-iso-week",
    ),
    pytest.param(
        _constraint("REGEX", value="(?P<x>a)(?P=x)"),
        "value",
        'must be a regular expression (RE2 syntax). You sent "(?P<x>a)(?P=x)".',
        id="regex-named-backreference-not-re2",
    ),
    pytest.param(
        _constraint("REGEX", value="a{1001}"),
        "value",
        'must be a regular expression (RE2 syntax). You sent "a{1001}".',
        id="regex-repetition-over-re2-limit",
    ),
    pytest.param(
        _constraint("DATE_AFTER", value="2024-13"),
        "value",
        'must be an ISO date or date-time. You sent "2024-13".',
        id="date-13th-month",
    ),
    pytest.param(
        _constraint("DATE_AFTER", value="2024-01-01T10"),
        "value",
        'must be an ISO date or date-time. You sent "2024-01-01T10".',
        id="date-hour-only",
    ),
    pytest.param(
        _constraint("REGEX", value="^a", inverted=True),
        "inverted",
        "must be false: the operator REGEX cannot be inverted. You sent true.",
        id="regex-inverted",
    ),
]


@pytest.mark.parametrize(("constraint", "key", "message"), REFUSED_CONSTRAINTS)
def test_add_strategy__constraint_unleash_refuses__400_whole_body(
    admin_client, flag, constraint, key, message
):
    response = post(admin_client, STRATEGIES, {"name": "default", "constraints": [constraint]})

    detail = _one_detail(f"/body/constraints/0/{key}", message)
    error = assert_error(response, 400, "ValidationError")
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": detail["message"],
        "details": [detail],
    }
    assert not FeatureStrategy.objects.exists()


@pytest.mark.parametrize(
    "constraint",
    [
        _constraint("NUM_GTE", value="-1.5e3"),
        _constraint("NUM_LT", value="42"),
        _constraint("DATE_AFTER", value="2026-11-27T10:00:00Z"),
        _constraint("DATE_BEFORE", value="2026-11-27"),
        _constraint("SEMVER_EQ", value="2.0.0-beta.1+build.7"),
        _constraint("IN", values=["a", "b"]),
        _constraint("STR_STARTS_WITH", values=["a"], caseInsensitive=True, inverted=True),
        _constraint("REGEX", value="^team-[a-z]+$"),
        _constraint("REGEX", value="(?<team>[a-z]+)-\\d+"),
        # RE2 syntax Python's re lacks, which Unleash 8.2 takes (measured).
        _constraint("REGEX", value="\\p{L}+\\z"),
        _constraint("REGEX", value="[(?=a)]"),
        _constraint("DATE_AFTER", value="2024-01-01T10:00:00+0100"),
        _constraint("DATE_AFTER", value="2024-01-01t10:00:00z"),
        _constraint("DATE_BEFORE", value="2024-01"),
    ],
    ids=lambda constraint: f"{constraint['operator']}-{constraint.get('value')}",
)
def test_add_strategy__constraint_unleash_accepts__200(admin_client, flag, constraint):
    response = post(admin_client, STRATEGIES, {"name": "default", "constraints": [constraint]})

    assert response.status_code == 200, response.content
    assert response.json()["constraints"][0]["operator"] == constraint["operator"]


@pytest.mark.parametrize(("fields", "detail"), OUT_OF_COLUMN)
def test_add_strategy__beyond_the_columns__400_whole_body(admin_client, flag, fields, detail):
    response = post(admin_client, STRATEGIES, {"name": "default", **fields})

    error = assert_error(response, 400, "ValidationError")
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": detail["message"],
        "details": [detail],
    }
    assert not FeatureStrategy.objects.exists()


@pytest.mark.parametrize(("fields", "detail"), OUT_OF_COLUMN)
def test_update_strategy__beyond_the_columns__400_whole_body(admin_client, flag, fields, detail):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()

    response = put(admin_client, f"{STRATEGIES}/{created['id']}", {"name": "default", **fields})

    error = assert_error(response, 400, "ValidationError")
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": detail["message"],
        "details": [detail],
    }
    assert admin_client.get(f"{STRATEGIES}/{created['id']}").json() == created


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"title": "t" * 255}, id="title-255-chars"),
        pytest.param({"sortOrder": INT32_MAX}, id="sort-order-int32-max"),
        pytest.param({"sortOrder": INT32_MIN}, id="sort-order-int32-min"),
    ],
)
def test_add_strategy__at_the_columns_limits__200(admin_client, flag, fields):
    response = post(admin_client, STRATEGIES, {"name": "default", **fields})

    assert response.status_code == 200, response.content
    strategy = response.json()
    assert strategy == _strategy_body(strategy["id"], **fields)
    assert admin_client.get(f"{STRATEGIES}/{strategy['id']}").json() == strategy


@pytest.mark.parametrize("last", [INT32_MAX - 1, INT32_MAX])
def test_add_strategy__after_one_at_int32_max__stays_in_range_and_last(admin_client, flag, last):
    first = post(admin_client, STRATEGIES, {"name": "default", "sortOrder": last}).json()

    response = post(admin_client, STRATEGIES, {"name": "remoteAddress"})

    assert response.status_code == 200, response.content
    added = response.json()
    assert added["sortOrder"] == INT32_MAX
    assert admin_client.get(STRATEGIES).json() == [first, added]


def test_add_strategy__unknown_environment__404(admin_client, flag):
    url = f"{FEATURES}/checkout/environments/staging/strategies"

    assert_error(post(admin_client, url, {"name": "default"}), 404, "NotFoundError")


def test_add_strategy__unknown_flag__404(admin_client, flag):
    url = f"{FEATURES}/nope/environments/development/strategies"

    assert_error(post(admin_client, url, {"name": "default"}), 404, "NotFoundError")


def test_add_strategy__viewer__403(viewer_client, flag):
    body = assert_error(post(viewer_client, STRATEGIES, {"name": "default"}), 403, "NoAccessError")

    assert body["permissions"] == ["UPDATE_FEATURE"]


def test_add_strategy__member__200(viewer_client, flag):
    ProjectRoleAssignmentFactory(project_id="default", user=viewer_client.user, role_id=5)

    assert post(viewer_client, STRATEGIES, {"name": "default"}).status_code == 200


def test_add_strategy__client_token__403(client_token_client, flag):
    assert_error(post(client_token_client, STRATEGIES, {"name": "default"}), 403, "NoAccessError")


def test_add_strategy__anonymous__401(anon_client, flag):
    assert_error(post(anon_client, STRATEGIES, {"name": "default"}), 401, "AuthenticationRequired")


def test_add_strategy__not_json__415(admin_client, flag):
    response = admin_client.generic("POST", STRATEGIES, "{}", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


# --- read --------------------------------------------------------------------------------------


def test_list_strategies__in_sort_order(admin_client, flag):
    second = post(admin_client, STRATEGIES, {"name": "default", "sortOrder": 2}).json()
    first = post(admin_client, STRATEGIES, {"name": "remoteAddress", "sortOrder": 1}).json()

    response = admin_client.get(STRATEGIES)

    assert response.status_code == 200
    assert response.json() == [first, second]


def test_list_strategies__viewer__200(viewer_client, admin_client, flag):
    post(admin_client, STRATEGIES, {"name": "default"})

    assert len(viewer_client.get(STRATEGIES).json()) == 1


def test_get_strategy__200(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()

    response = admin_client.get(f"{STRATEGIES}/{created['id']}")

    assert response.status_code == 200
    assert response.json() == created


@pytest.mark.parametrize("strategy_id", [str(uuid.uuid4()), "not-a-uuid"])
def test_get_strategy__unknown__404(admin_client, flag, strategy_id):
    assert_error(admin_client.get(f"{STRATEGIES}/{strategy_id}"), 404, "NotFoundError")


def test_get_strategy__of_another_environment__404(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()
    other = f"{FEATURES}/checkout/environments/production/strategies/{created['id']}"

    assert_error(admin_client.get(other), 404, "NotFoundError")


# --- update ------------------------------------------------------------------------------------


def test_update_strategy__replaces_records_before_and_after(admin_client, flag):
    created = post(
        admin_client, STRATEGIES, {"name": "flexibleRollout", "parameters": {"rollout": "0"}}
    ).json()
    url = f"{STRATEGIES}/{created['id']}"

    response = put(
        admin_client,
        url,
        {"name": "flexibleRollout", "parameters": {"rollout": "100"}, "title": "all"},
    )

    assert response.status_code == 200
    assert response.json() == _strategy_body(
        created["id"],
        name="flexibleRollout",
        title="all",
        parameters={"rollout": "100", "groupId": "checkout", "stickiness": "default"},
    )
    event = AuditEvent.objects.get(type="feature-strategy-update")
    assert event.pre_data["parameters"]["rollout"] == "0"
    assert event.data["parameters"]["rollout"] == "100"
    assert event.environment == "development"


def test_update_strategy__unchanged__no_event(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()

    response = put(admin_client, f"{STRATEGIES}/{created['id']}", {"name": "default"})

    assert response.status_code == 200
    assert not AuditEvent.objects.filter(type="feature-strategy-update").exists()


def test_update_strategy__unknown__404(admin_client, flag):
    response = put(admin_client, f"{STRATEGIES}/{uuid.uuid4()}", {"name": "default"})

    assert_error(response, 404, "NotFoundError")


def test_update_strategy__invalid__400(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()

    response = put(admin_client, f"{STRATEGIES}/{created['id']}", {"name": "nope"})

    assert_error(response, 400, "ValidationError")


def test_update_strategy__viewer__403(viewer_client, admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()

    response = put(viewer_client, f"{STRATEGIES}/{created['id']}", {"name": "default"})

    assert_error(response, 403, "NoAccessError")


# --- delete ------------------------------------------------------------------------------------


def test_delete_strategy__200_gone_event(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()

    response = admin_client.delete(f"{STRATEGIES}/{created['id']}")

    assert response.status_code == 200
    assert not FeatureStrategy.objects.exists()
    event = AuditEvent.objects.get(type="feature-strategy-remove")
    assert event.pre_data["id"] == created["id"]
    assert event.data is None


def test_delete_strategy__last_enabled_one__flag_turned_off(admin_client, flag):
    kept = post(admin_client, STRATEGIES, {"name": "default", "disabled": True}).json()
    removed = post(admin_client, STRATEGIES, {"name": "default"}).json()
    admin_client.post(
        f"{FEATURES}/checkout/environments/development/on", content_type="application/json"
    )

    response = admin_client.delete(f"{STRATEGIES}/{removed['id']}")

    assert response.status_code == 200
    assert admin_client.get(STRATEGIES).json() == [kept]
    detail = admin_client.get(f"{FEATURES}/checkout").json()
    assert [e["enabled"] for e in detail["environments"]] == [False, False]
    types = AuditEvent.objects.filter(environment="development").order_by("id")
    assert [e.type for e in types][-2:] == [
        "feature-strategy-remove",
        "feature-environment-disabled",
    ]


def test_delete_strategy__an_enabled_one_left__stays_on(admin_client, flag):
    post(admin_client, STRATEGIES, {"name": "default"})
    removed = post(admin_client, STRATEGIES, {"name": "default"}).json()
    admin_client.post(
        f"{FEATURES}/checkout/environments/development/on", content_type="application/json"
    )

    admin_client.delete(f"{STRATEGIES}/{removed['id']}")

    detail = admin_client.get(f"{FEATURES}/checkout").json()
    assert [e["enabled"] for e in detail["environments"]] == [True, False]


def test_delete_strategy__unknown__404(admin_client, flag):
    assert_error(admin_client.delete(f"{STRATEGIES}/{uuid.uuid4()}"), 404, "NotFoundError")


def test_delete_strategy__viewer__403(viewer_client, admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()

    assert_error(viewer_client.delete(f"{STRATEGIES}/{created['id']}"), 403, "NoAccessError")
    assert FeatureStrategy.objects.count() == 1
