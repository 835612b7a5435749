"""Strategy definitions over HTTP (getAllStrategies, createStrategy, getStrategy,
updateStrategy, deprecateStrategy, reactivateStrategy), answered as Unleash 8.2 answers them:
its four built-in strategies, messages and events, measured on the reference; and flags'
strategies named by them."""

from __future__ import annotations

import json

import pytest

from definitions.models import StrategyDefinition
from definitions.selectors import strategy_names
from flagadmin.core.models import AuditEvent
from tests.conftest import assert_error
from tests.factories import StrategyDefinitionFactory

STRATEGIES = "/api/admin/strategies"
FEATURES = "/api/admin/projects/default/features"
FLAG_STRATEGIES = f"{FEATURES}/flag/environments/development/strategies"

GROUP_ID = {
    "name": "groupId",
    "type": "string",
    "description": "Used to define a activation groups, which allows you to correlate across "
    "feature toggles.",
    "required": True,
}
# GET /api/admin/strategies on a fresh Unleash 8.2, in its order.
BUILT_IN = [
    {
        "displayName": "Gradual rollout",
        "name": "flexibleRollout",
        "editable": False,
        "description": "Roll out to a percentage of your userbase, and ensure that the "
        "experience is the same for the user on each visit.",
        "parameters": [
            {"name": "rollout", "type": "percentage", "description": "", "required": False},
            {
                "name": "stickiness",
                "type": "string",
                "description": "Used define stickiness. Possible values: default, userId, "
                "sessionId, random",
                "required": True,
            },
            GROUP_ID,
        ],
        "deprecated": False,
        "title": None,
    },
    {
        "displayName": "Standard",
        "name": "default",
        "editable": False,
        "description": "This strategy turns on / off for your entire userbase. Prefer using "
        '"Gradual rollout" strategy (100%=on, 0%=off).',
        "parameters": [],
        "deprecated": False,
        "title": None,
    },
    {
        "displayName": "IPs",
        "name": "remoteAddress",
        "editable": False,
        "description": "Enable the feature for a specific set of IP addresses.",
        "parameters": [
            {
                "name": "IPs",
                "type": "list",
                "description": "List of IPs to enable the feature toggle for.",
                "required": True,
            }
        ],
        "deprecated": False,
        "title": None,
    },
    {
        "displayName": "Hosts",
        "name": "applicationHostname",
        "editable": False,
        "description": "Enable the feature for a specific set of hostnames.",
        "parameters": [
            {
                "name": "hostNames",
                "type": "list",
                "description": "List of hostnames to enable the feature toggle for.",
                "required": False,
            }
        ],
        "deprecated": False,
        "title": None,
    },
]
PARAMETERS = [
    {"name": "tenants", "type": "list", "description": "Who gets it", "required": True},
    {"name": "level", "type": "number"},
]


def send(client, method: str, url: str, body=None, content_type: str = "application/json"):
    data = None if body is None else json.dumps(body)
    return getattr(client, method)(url, data, content_type=content_type)


def _events(*kinds: str) -> list[tuple]:
    return list(
        AuditEvent.objects.filter(type__in=kinds)
        .order_by("id")
        .values_list("type", "data", "pre_data")
    )


# --- list and read ------------------------------------------------------------------------------


def test_list__fresh_instance__unleash_built_ins_in_its_order(
    admin_client, django_assert_max_num_queries
):
    with django_assert_max_num_queries(3):
        response = admin_client.get(STRATEGIES)

    assert response.status_code == 200
    assert response.json() == {"version": 1, "strategies": BUILT_IN}
    assert strategy_names() == [
        "flexibleRollout",
        "default",
        "remoteAddress",
        "applicationHostname",
    ]


def test_list__custom_ones_after_built_ins_by_name(admin_client, django_assert_max_num_queries):
    for name in ("zeta", "alpha", "mid"):
        StrategyDefinitionFactory(name=name)

    with django_assert_max_num_queries(3):
        response = admin_client.get(STRATEGIES)

    names = [s["name"] for s in response.json()["strategies"]]
    assert names[4:] == ["alpha", "mid", "zeta"]


def test_list__viewer__200(viewer_client):
    assert viewer_client.get(STRATEGIES).status_code == 200


@pytest.mark.parametrize("url", [STRATEGIES, f"{STRATEGIES}/default"], ids=["list", "one"])
def test_read__client_token__403(client_token_client, url):
    # Reading needs no permission, but a token of the admin API (Unleash: 403 as well).
    assert_error(client_token_client.get(url), 403, "NoAccessError")


def test_one__anonymous__401(db, anon_client):
    assert_error(anon_client.get(f"{STRATEGIES}/default"), 401, "AuthenticationRequired")


def test_list__anonymous__401(db, anon_client):
    assert_error(anon_client.get(STRATEGIES), 401, "AuthenticationRequired")


def test_retrieve__built_in__200(admin_client):
    response = admin_client.get(f"{STRATEGIES}/remoteAddress")

    assert response.status_code == 200
    assert response.json() == BUILT_IN[2]


def test_retrieve__unknown__404_with_unleash_message(admin_client):
    body = assert_error(admin_client.get(f"{STRATEGIES}/nope"), 404, "NotFoundError")

    assert body["message"] == "No strategy found"


# --- create -------------------------------------------------------------------------------------


def test_create__201_location_body_and_event(admin_client):
    sent = {
        "name": "tenant-gate",
        "title": "Tenants",
        "description": "Only some tenants",
        "parameters": [{**PARAMETERS[0], "extra": 1}, PARAMETERS[1]],
        "editable": False,
        "deprecated": True,
    }

    response = send(admin_client, "post", STRATEGIES, sent)

    assert response.status_code == 201
    assert response["Location"] == "/api/admin/strategies/tenant-gate"
    expected = {
        "displayName": None,
        "name": "tenant-gate",
        "editable": True,
        "description": "Only some tenants",
        "parameters": PARAMETERS,
        "deprecated": False,
        "title": "Tenants",
    }
    assert response.json() == expected
    assert admin_client.get(f"{STRATEGIES}/tenant-gate").json() == expected
    assert _events("strategy-created") == [
        (
            "strategy-created",
            {
                "name": "tenant-gate",
                "title": "Tenants",
                "description": "Only some tenants",
                "parameters": PARAMETERS,
                "editable": True,
                "deprecated": False,
            },
            None,
        )
    ]
    assert strategy_names()[-1] == "tenant-gate"


def test_create__name_and_no_parameters__201(admin_client):
    response = send(admin_client, "post", STRATEGIES, {"name": "plain", "parameters": []})

    assert response.status_code == 201
    assert response.json() == {
        "displayName": None,
        "name": "plain",
        "editable": True,
        "description": None,
        "parameters": [],
        "deprecated": False,
        "title": None,
    }


def test_create__name_taken__409(admin_client):
    response = send(admin_client, "post", STRATEGIES, {"name": "default", "parameters": []})

    body = assert_error(response, 409, "NameExistsError")
    assert body["message"] == "Strategy with name default already exist!"
    assert _events("strategy-created") == []


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"name": "s"}, "/body/parameters", id="no-parameters"),
        pytest.param({"parameters": []}, "/body/name", id="no-name"),
        pytest.param({"name": "a b", "parameters": []}, "/body/name", id="not-url-friendly"),
        pytest.param({"name": "x" * 101, "parameters": []}, "/body/name", id="name-over-100"),
        pytest.param({"name": "s", "parameters": {}}, "/body/parameters", id="parameters-object"),
        pytest.param(
            {"name": "s", "parameters": [{"type": "string"}]},
            "/body/parameters/0/name",
            id="parameter-without-name",
        ),
        pytest.param(
            {"name": "s", "parameters": [{"name": "p"}]},
            "/body/parameters/0/type",
            id="parameter-without-type",
        ),
        pytest.param(
            {"name": "s", "parameters": [{"name": "p", "type": "nope"}]},
            "/body/parameters/0/type",
            id="parameter-type-unknown",
        ),
        pytest.param(
            {"name": "s", "parameters": [{"name": "p", "type": "list", "required": "yes"}]},
            "/body/parameters/0/required",
            id="parameter-required-not-boolean",
        ),
        # Unleash takes two parameters of one name; a strategy could then set only one.
        pytest.param(
            {"name": "s", "parameters": [{"name": "p", "type": "list"}] * 2},
            "/body/parameters/1/name",
            id="parameter-name-twice",
        ),
        pytest.param({"name": "s", "parameters": [], "title": 5}, "/body/title", id="title"),
    ],
)
def test_create__invalid__400_nothing_written(admin_client, body, path):
    response = send(admin_client, "post", STRATEGIES, body)

    error = assert_error(response, 400, "ValidationError")
    assert path in [detail["path"] for detail in error["details"]]
    assert StrategyDefinition.objects.count() == len(BUILT_IN)


def test_create__editor__201(editor_client):
    response = send(editor_client, "post", STRATEGIES, {"name": "s", "parameters": []})

    assert response.status_code == 201


def test_create__viewer__403_names_the_permission(viewer_client):
    response = send(viewer_client, "post", STRATEGIES, {"name": "s", "parameters": []})

    assert assert_error(response, 403, "NoAccessError")["permissions"] == ["CREATE_STRATEGY"]


def test_create__client_token__403(client_token_client):
    response = send(client_token_client, "post", STRATEGIES, {"name": "s", "parameters": []})

    assert_error(response, 403, "NoAccessError")


def test_create__wrong_content_type__415(admin_client):
    response = send(admin_client, "post", STRATEGIES, {"name": "s"}, content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


# --- update -------------------------------------------------------------------------------------


def test_update__200_no_body_replaces_parameters_keeps_title_and_records_before(admin_client):
    StrategyDefinitionFactory(name="gate", title="T", description="old", parameters=PARAMETERS)
    sent = {"description": "new", "parameters": [{"name": "r", "type": "string"}]}

    response = send(admin_client, "put", f"{STRATEGIES}/gate", sent)

    assert response.status_code == 200
    assert response.content == b""
    before = {
        "displayName": None,
        "name": "gate",
        "editable": True,
        "description": "old",
        "parameters": PARAMETERS,
        "deprecated": False,
        "title": "T",
    }
    after = {**before, "description": "new", "parameters": [{"name": "r", "type": "string"}]}
    assert admin_client.get(f"{STRATEGIES}/gate").json() == after
    assert _events("strategy-updated") == [
        (
            "strategy-updated",
            {"name": "gate", "description": "new", "parameters": [{"name": "r", "type": "string"}]},
            before,
        )
    ]


def test_update__description_left_out__kept(admin_client):
    StrategyDefinitionFactory(name="gate", description="kept")

    assert send(admin_client, "put", f"{STRATEGIES}/gate", {"parameters": []}).status_code == 200

    gate = StrategyDefinition.objects.get(pk="gate")
    assert (gate.description, gate.parameters) == ("kept", [])


def test_update__no_parameters__400(admin_client):
    StrategyDefinitionFactory(name="gate")

    response = send(admin_client, "put", f"{STRATEGIES}/gate", {"description": "x"})

    error = assert_error(response, 400, "ValidationError")
    assert [detail["path"] for detail in error["details"]] == ["/body/parameters"]


def test_update__built_in__403_where_unleash_answers_500(admin_client):
    # Unleash 8.2: 500 UnknownError "Cannot edit strategy default" (a plain Error thrown).
    response = send(admin_client, "put", f"{STRATEGIES}/default", {"parameters": []})

    body = assert_error(response, 403, "InvalidOperationError")
    assert body["message"] == "Cannot edit strategy default"
    assert admin_client.get(f"{STRATEGIES}/default").json() == BUILT_IN[1]
    assert _events("strategy-updated") == []


def test_update__unknown__404(admin_client):
    response = send(admin_client, "put", f"{STRATEGIES}/nope", {"parameters": []})

    assert assert_error(response, 404, "NotFoundError")["message"] == "No strategy found"


def test_update__viewer__403(viewer_client):
    response = send(viewer_client, "put", f"{STRATEGIES}/default", {"parameters": []})

    assert assert_error(response, 403, "NoAccessError")["permissions"] == ["UPDATE_STRATEGY"]


# --- deprecate and reactivate -------------------------------------------------------------------


def test_deprecate_then_reactivate__200_events_each_time(admin_client):
    StrategyDefinitionFactory(name="gate")

    responses = [
        admin_client.post(f"{STRATEGIES}/gate/deprecate"),
        admin_client.post(f"{STRATEGIES}/gate/deprecate"),
    ]
    deprecated = admin_client.get(f"{STRATEGIES}/gate").json()["deprecated"]
    responses.append(admin_client.post(f"{STRATEGIES}/gate/reactivate"))

    assert [(r.status_code, r.content) for r in responses] == [(200, b"")] * 3
    assert deprecated is True
    assert admin_client.get(f"{STRATEGIES}/gate").json()["deprecated"] is False
    assert _events("strategy-deprecated", "strategy-reactivated") == [
        ("strategy-deprecated", {"name": "gate"}, None),
        ("strategy-deprecated", {"name": "gate"}, None),
        ("strategy-reactivated", {"name": "gate"}, None),
    ]


def test_deprecate__built_in__allowed_as_unleash(admin_client):
    assert admin_client.post(f"{STRATEGIES}/default/deprecate").status_code == 200

    assert admin_client.get(f"{STRATEGIES}/default").json() == {**BUILT_IN[1], "deprecated": True}


@pytest.mark.parametrize(
    ("action", "message"),
    [
        pytest.param("deprecate", "Could not find strategy with name nope", id="deprecate"),
        pytest.param("reactivate", "No strategy found", id="reactivate"),
    ],
)
def test_deprecation__unknown__404_with_unleash_messages(admin_client, action, message):
    response = admin_client.post(f"{STRATEGIES}/nope/{action}")

    assert assert_error(response, 404, "NotFoundError")["message"] == message


def test_deprecate__any_content_type__200(admin_client):
    response = admin_client.post(f"{STRATEGIES}/default/deprecate", "x", content_type="text/plain")

    assert response.status_code == 200


def test_deprecate__viewer__403(viewer_client):
    response = viewer_client.post(f"{STRATEGIES}/default/deprecate")

    assert assert_error(response, 403, "NoAccessError")["permissions"] == ["UPDATE_STRATEGY"]


# --- flags' strategies name a definition ---------------------------------------------------------


@pytest.fixture
def flag(admin_client) -> None:
    assert send(admin_client, "post", FEATURES, {"name": "flag"}).status_code == 201


def test_flag_strategy__custom_strategy__200_reaches_sdks(admin_client, client_token_client, flag):
    send(admin_client, "post", STRATEGIES, {"name": "gate", "parameters": PARAMETERS})

    response = send(
        admin_client, "post", FLAG_STRATEGIES, {"name": "gate", "parameters": {"tenants": "a,b"}}
    )

    assert response.status_code == 200, response.content
    features = client_token_client.get("/api/client/features").json()["features"]
    assert [(s["name"], s["parameters"]) for s in features[0]["strategies"]] == [
        ("gate", {"tenants": "a,b"})
    ]


def test_flag_strategy__deprecated_strategy__200_as_unleash(admin_client, flag):
    admin_client.post(f"{STRATEGIES}/default/deprecate")

    assert send(admin_client, "post", FLAG_STRATEGIES, {"name": "default"}).status_code == 200


def test_flag_strategy__unknown_strategy__400_nothing_written(admin_client, flag):
    response = send(admin_client, "post", FLAG_STRATEGIES, {"name": "gate"})

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [
        {
            "path": "/body/name",
            "message": "The `/body/name` property must name a strategy type of this instance "
            '(`GET /api/admin/strategies`). You sent "gate".',
        }
    ]


# --- delete -------------------------------------------------------------------------------------


def test_delete__custom_unused__200_event(admin_client):
    StrategyDefinitionFactory(name="gate")

    response = admin_client.delete(f"{STRATEGIES}/gate")

    assert (response.status_code, response.content) == (200, b"")
    assert not StrategyDefinition.objects.filter(pk="gate").exists()
    assert _events("strategy-deleted") == [("strategy-deleted", {"name": "gate"}, None)]


def test_delete__built_in__403_where_unleash_answers_500(admin_client):
    # Unleash 8.2: 500 UnknownError "Cannot edit strategy default".
    body = assert_error(admin_client.delete(f"{STRATEGIES}/default"), 403, "InvalidOperationError")

    assert body["message"] == "Cannot edit strategy default"
    assert StrategyDefinition.objects.filter(pk="default").exists()


def test_delete__used_by_an_archived_flag__409_kept(admin_client, flag):
    send(admin_client, "post", STRATEGIES, {"name": "gate", "parameters": []})
    assert send(admin_client, "post", FLAG_STRATEGIES, {"name": "gate"}).status_code == 200
    assert admin_client.delete(f"{FEATURES}/flag").status_code == 202

    # Unleash deletes it, and the flag's strategy then names a type that no longer exists.
    body = assert_error(admin_client.delete(f"{STRATEGIES}/gate"), 409, "ConflictError")

    assert body["message"].startswith("This strategy type is used by strategies of flags")
    assert _events("strategy-deleted") == []


def test_delete__unknown__404(admin_client):
    body = assert_error(admin_client.delete(f"{STRATEGIES}/nope"), 404, "NotFoundError")

    assert body["message"] == "No strategy found"


def test_delete__viewer__403(viewer_client):
    response = viewer_client.delete(f"{STRATEGIES}/default")

    assert assert_error(response, 403, "NoAccessError")["permissions"] == ["DELETE_STRATEGY"]
