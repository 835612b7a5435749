"""The Django admin's strategy editor (features/admin_strategies.py) and the strategies in
words (features/admin_summaries.py), through the admin's HTTP.

The editor writes what the API writes: a strategy saved on its page reads back from the API's
GET exactly as the same strategy posted to the API does, with the same audit event; what the
API refuses, the page refuses on the field at fault, and nothing is written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from definitions.models import ContextField
from features.models import FeatureEnvironment, FeatureStrategy, Segment
from flagadmin.core.models import AuditEvent, Role
from projects.models import Project
from tests.admin_forms import change_form_data, editor_rows
from tests.factories import (
    FeatureEnvironmentFactory,
    FeatureFactory,
    FeatureStrategyFactory,
    UserFactory,
)

FEATURES = "/api/admin/projects/default/features"
EDITOR = "/admin/features/featurestrategy"
FLAGS = "/admin/features/feature/"
# What a `feature-strategy-*` event holds of the strategy the API's GET answers.
EVENT_KEYS = (
    "id",
    "name",
    "title",
    "disabled",
    "constraints",
    "parameters",
    "variants",
    "sortOrder",
    "segments",
)


@pytest.fixture
def operator(db):
    return UserFactory(username="operator", root_role_id=Role.ADMIN)


@pytest.fixture
def staff(operator) -> Client:
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def country(db) -> None:
    """A custom context field, as an operator creates one (definitions)."""
    ContextField.objects.create(name="country")


def _create_flag(admin_client, name: str) -> None:
    body = json.dumps({"name": name})
    assert admin_client.post(FEATURES, body, content_type="application/json").status_code == 201


@pytest.fixture
def checkout(admin_client) -> str:
    _create_flag(admin_client, "checkout")
    return "checkout"


def _api_strategy(admin_client, flag: str, strategy_id: str) -> dict[str, Any]:
    url = f"{FEATURES}/{flag}/environments/development/strategies/{strategy_id}"
    response = admin_client.get(url)
    assert response.status_code == 200
    return response.json()


def _add_page(staff: Client, flag: str = "checkout", environment: str = "development"):
    response = staff.get(f"{EDITOR}/add/?flag={flag}&environment={environment}")
    assert response.status_code == 200
    return response


def _nothing_written(before: int) -> bool:
    return not FeatureStrategy.objects.exists() and AuditEvent.objects.count() == before


# The same strategy through the editor's fields and as the API's body.
EDITOR_FIELDS = {
    "name": "flexibleRollout",
    "title": "Nordics",
    "rollout": "50",
    "stickiness": "userId",
    "group_id": "",
}
CONSTRAINT_ROWS = [
    {"context_name": "country", "operator": "IN", "values": "NO\nSE\n", "case_insensitive": "on"},
    {
        "context_name": "currentTime",
        "operator": "DATE_AFTER",
        "value": "2026-01-01T00:00:00.000Z",
        "inverted": "on",
    },
]
VARIANT_ROWS = [
    {
        "name": "blue",
        "weight_type": "variable",
        "weight": "",
        "stickiness": "userId",
        "payload_type": "string",
        "payload_value": "b",
    },
    {"name": "green", "weight_type": "fix", "weight": "25", "stickiness": "userId"},
]
API_BODY = {
    "name": "flexibleRollout",
    "title": "Nordics",
    "parameters": {"rollout": "50", "stickiness": "userId"},
    "constraints": [
        {
            "contextName": "country",
            "operator": "IN",
            "values": ["NO", "SE"],
            "caseInsensitive": True,
        },
        {
            "contextName": "currentTime",
            "operator": "DATE_AFTER",
            "value": "2026-01-01T00:00:00.000Z",
            "inverted": True,
        },
    ],
    "variants": [
        {
            "name": "blue",
            "weight": 0,
            "weightType": "variable",
            "stickiness": "userId",
            "payload": {"type": "string", "value": "b"},
        },
        {"name": "green", "weight": 250, "weightType": "fix", "stickiness": "userId"},
    ],
}


def _editor_data(page, segment_ids: list[int], **changes: Any) -> dict[str, Any]:
    return change_form_data(
        page,
        **EDITOR_FIELDS,
        segments=segment_ids,
        **editor_rows("constraints", CONSTRAINT_ROWS),
        **editor_rows("variants", VARIANT_ROWS),
        **changes,
    )


def test_editor_add__strategy_as_the_api_reads_it_with_its_event(
    staff, admin_client, checkout, country, operator
):
    segment = Segment.objects.create(name="beta-testers")
    data = _editor_data(_add_page(staff), [segment.pk])

    response = staff.post(f"{EDITOR}/add/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert response["Location"] == f"{FLAGS}checkout/change/"
    strategy = FeatureStrategy.objects.get()
    assert _api_strategy(admin_client, "checkout", str(strategy.pk)) == {
        "id": str(strategy.pk),
        "name": "flexibleRollout",
        "title": "Nordics",
        "disabled": False,
        "featureName": "checkout",
        "sortOrder": 0,
        "segments": [segment.pk],
        "constraints": [
            {
                "contextName": "country",
                "operator": "IN",
                "caseInsensitive": True,
                "inverted": False,
                "values": ["NO", "SE"],
            },
            {
                "contextName": "currentTime",
                "operator": "DATE_AFTER",
                "caseInsensitive": False,
                "inverted": True,
                "value": "2026-01-01T00:00:00.000Z",
            },
        ],
        "variants": [
            {
                "name": "blue",
                "weight": 750,
                "weightType": "variable",
                "stickiness": "userId",
                "payload": {"type": "string", "value": "b"},
            },
            {"name": "green", "weight": 250, "weightType": "fix", "stickiness": "userId"},
        ],
        # The flag's name as group id when none is given, as Unleash fills it in.
        "parameters": {"rollout": "50", "stickiness": "userId", "groupId": "checkout"},
    }
    [event] = AuditEvent.objects.filter(feature_name="checkout", type="feature-strategy-add")
    answer = _api_strategy(admin_client, "checkout", str(strategy.pk))
    assert event.data == {key: answer[key] for key in EVENT_KEYS}
    assert (event.project, event.environment, event.pre_data) == ("default", "development", None)
    assert (event.created_by_user_id, event.created_by) == (operator.pk, operator.email)


def test_editor_add__same_strategy_and_event_as_the_api(staff, admin_client, checkout, country):
    # The twin: the same definition posted to the API for another flag of the same project.
    _create_flag(admin_client, "checkout-twin")
    segment = Segment.objects.create(name="beta-testers")
    twin_url = f"{FEATURES}/checkout-twin/environments/development/strategies"
    twin = admin_client.post(
        twin_url,
        json.dumps({**API_BODY, "segments": [segment.pk]}),
        content_type="application/json",
    ).json()

    response = staff.post(f"{EDITOR}/add/", _editor_data(_add_page(staff), [segment.pk]))

    assert response.status_code == 302, response.content.decode()[:3000]
    edited = _api_strategy(
        admin_client,
        "checkout",
        str(FeatureStrategy.objects.get(feature_environment__feature_id="checkout").pk),
    )

    def comparable(body: dict[str, Any], flag: str) -> dict[str, Any]:
        # Ids and the flag's name (and its group id) aside, the same strategy.
        return {
            **body,
            "id": None,
            "featureName": None,
            "parameters": {**body["parameters"], "groupId": body["parameters"]["groupId"] == flag},
        }

    assert comparable(edited, "checkout") == comparable(twin, "checkout-twin")
    events = {
        event.feature_name: event
        for event in AuditEvent.objects.filter(type="feature-strategy-add")
    }
    for flag, body in (("checkout", edited), ("checkout-twin", twin)):
        assert events[flag].data == {key: body[key] for key in EVENT_KEYS}
        assert events[flag].tags == events["checkout-twin"].tags


def test_editor_add__save_and_add_another__same_flag_and_environment(staff, checkout):
    data = change_form_data(_add_page(staff), name="default", _addanother="1")

    response = staff.post(f"{EDITOR}/add/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert response["Location"] == f"{EDITOR}/add/?flag=checkout&environment=development"
    assert FeatureStrategy.objects.get().name == "default"


def test_editor_change__replaces_the_strategy_and_records_before_and_after(
    staff, admin_client, checkout, country
):
    url = f"{FEATURES}/checkout/environments/development/strategies"
    created = admin_client.post(url, json.dumps(API_BODY), content_type="application/json").json()
    before = {key: created[key] for key in EVENT_KEYS}
    page = staff.get(f"{EDITOR}/{created['id']}/change/")
    data = change_form_data(
        page,
        rollout="30",
        title="",
        **{"constraints-1-DELETE": "on", "variants-1-weight": "40"},
    )

    response = staff.post(f"{EDITOR}/{created['id']}/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    after = _api_strategy(admin_client, "checkout", created["id"])
    assert after == {
        **created,
        "title": None,
        "parameters": {"rollout": "30", "stickiness": "userId", "groupId": "checkout"},
        "constraints": created["constraints"][:1],
        "variants": [
            {**created["variants"][0], "weight": 600},
            {**created["variants"][1], "weight": 400},
        ],
    }
    [event] = AuditEvent.objects.filter(type="feature-strategy-update")
    assert event.pre_data == before
    assert event.data == {key: after[key] for key in EVENT_KEYS}


def test_editor_change__saved_unchanged__nothing_changes_and_no_event(
    staff, admin_client, checkout, country
):
    # What the page shows posts back to the same strategy: every field read and written whole.
    segment = Segment.objects.create(name="beta-testers")
    url = f"{FEATURES}/checkout/environments/development/strategies"
    body = {**API_BODY, "segments": [segment.pk], "parameters": {"rollout": "5", "x": "1"}}
    created = admin_client.post(url, json.dumps(body), content_type="application/json").json()
    events = AuditEvent.objects.count()
    page = staff.get(f"{EDITOR}/{created['id']}/change/")

    response = staff.post(f"{EDITOR}/{created['id']}/change/", change_form_data(page))

    assert response.status_code == 302, response.content.decode()[:3000]
    assert _api_strategy(admin_client, "checkout", created["id"]) == created
    assert AuditEvent.objects.count() == events


def test_editor_change__pause_the_last_strategy__flag_turned_off(staff, admin_client, checkout):
    url = f"{FEATURES}/checkout/environments/development"
    created = admin_client.post(
        f"{url}/strategies", json.dumps({"name": "default"}), content_type="application/json"
    ).json()
    assert admin_client.post(f"{url}/on").status_code == 200
    page = staff.get(f"{EDITOR}/{created['id']}/change/")

    response = staff.post(
        f"{EDITOR}/{created['id']}/change/", change_form_data(page, disabled="on")
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    state = FeatureEnvironment.objects.get(feature_id="checkout", environment_id="development")
    assert state.enabled is False
    assert list(AuditEvent.objects.order_by("-id").values_list("type", flat=True)[:2]) == [
        "feature-environment-disabled",
        "feature-strategy-update",
    ]


def _constraint(**fields: str) -> list[dict[str, str]]:
    return [{"context_name": "userId", "operator": "IN", "values": "a", **fields}]


def _variants(*rows: tuple[str, str, str]) -> list[dict[str, str]]:
    return [
        {"name": name, "weight_type": kind, "weight": weight, "stickiness": "default"}
        for name, kind, weight in rows
    ]


@pytest.mark.parametrize(
    ("changes", "where", "errors"),
    [
        pytest.param(
            {"rollout": "101"},
            "rollout",
            ["must be an integer from 0 to 100"],
            id="rollout-101",
        ),
        pytest.param(
            {"rollout": "-1"},
            "rollout",
            ["must be an integer from 0 to 100"],
            id="rollout-negative",
        ),
        pytest.param(
            editor_rows("constraints", _constraint(operator="LIKE")),
            "constraints-0",
            {"operator": ["Select a valid choice. LIKE is not one of the available choices."]},
            id="unknown-operator",
        ),
        pytest.param(
            editor_rows("constraints", _constraint(values="\n \n")),
            "constraints-0",
            {"values": ["must NOT have fewer than 1 items"]},
            id="IN-without-values",
        ),
        pytest.param(
            editor_rows("constraints", _constraint(context_name="country")),
            "constraints-0",
            {
                "context_name": [
                    "Select a valid choice. country is not one of the available choices."
                ]
            },
            id="unknown-context-field",
        ),
        pytest.param(
            editor_rows("constraints", _constraint(operator="NUM_GT", value="many")),
            "constraints-0",
            {"value": ["must be a number"]},
            id="NUM_GT-not-a-number",
        ),
        pytest.param(
            editor_rows("constraints", _constraint(operator="SEMVER_EQ", value="")),
            "constraints-0",
            {"value": ["must not be empty: the operator SEMVER_EQ compares against it"]},
            id="SEMVER_EQ-without-value",
        ),
        pytest.param(
            editor_rows("variants", _variants(("a", "fix", "30"), ("b", "fix", "30"))),
            "variants",
            ['must contain at least one "variable" variant'],
            id="weights-not-summing-without-a-variable-one",
        ),
        pytest.param(
            editor_rows(
                "variants", _variants(("a", "fix", "60"), ("b", "fix", "50"), ("c", "variable", ""))
            ),
            "variants",
            [
                "must not have fix weights adding up to more than 1000 (the traffic distribution "
                "total must equal 100%)"
            ],
            id="fix-weights-over-100",
        ),
        pytest.param(
            editor_rows("variants", _variants(("a", "variable", ""), ("a", "variable", ""))),
            "variants",
            ['variants/1/name repeats the variant name "a"'],
            id="variant-names-repeated",
        ),
        pytest.param(
            {"name": "userWithId"},
            "name",
            ["Select a valid choice. userWithId is not one of the available choices."],
            id="type-not-defined",
        ),
        pytest.param(
            {"other_parameters": "no equals sign"},
            "other_parameters",
            ["Write each parameter as name=value: no equals sign"],
            id="parameter-line-without-a-value",
        ),
    ],
)
def test_editor_add__invalid__error_on_the_page_and_nothing_written(
    staff, checkout, changes, where, errors
):
    events = AuditEvent.objects.count()
    data = change_form_data(_add_page(staff), **changes)

    response = staff.post(f"{EDITOR}/add/", data)

    assert response.status_code == 200
    editor = response.context["editor"]
    if where in ("constraints", "variants"):
        shown = list(getattr(editor, where).non_form_errors())
    elif where.startswith(("constraints-", "variants-")):
        prefix, index = where.split("-")
        shown = getattr(editor, prefix).forms[int(index)].errors
    else:
        shown = editor.form.errors[where]
    assert shown == errors
    assert "Please correct the error" in response.content.decode()
    assert _nothing_written(events)


def test_editor_add__value_not_legal_for_the_field__refused_by_the_service_on_the_row(
    staff, checkout
):
    ContextField.objects.create(name="tier", legal_values=[{"value": "gold"}])
    events = AuditEvent.objects.count()
    rows = _constraint(context_name="userId"), _constraint(context_name="tier", values="tin")
    data = change_form_data(_add_page(staff), **editor_rows("constraints", [*rows[0], *rows[1]]))

    response = staff.post(f"{EDITOR}/add/", data)

    assert response.status_code == 200
    constraints = response.context["editor"].constraints
    assert [form.errors for form in constraints.forms] == [
        {},
        {"values": ["holds values not specified as legal values on this context field: tin"]},
    ]
    assert _nothing_written(events)


def test_editor_add__segment_of_another_project__not_offered_nor_taken(staff, checkout):
    Project.objects.create(id="payments", name="Payments")
    theirs = Segment.objects.create(name="payers", project_id="payments")
    ours = Segment.objects.create(name="everyone")
    events = AuditEvent.objects.count()
    page = _add_page(staff)

    response = staff.post(f"{EDITOR}/add/", change_form_data(page, segments=[theirs.pk]))

    offered = list(page.context["editor"].form.fields["segments"].queryset)
    assert offered == [ours]
    assert response.status_code == 200
    assert response.context["editor"].form.errors == {
        "segments": [f"Select a valid choice. {theirs.pk} is not one of the available choices."]
    }
    assert _nothing_written(events)


def test_editor_add__archived_flag__refused_and_nothing_written(staff, admin_client, checkout):
    page = _add_page(staff)
    assert admin_client.delete(f"{FEATURES}/checkout").status_code == 202
    events = AuditEvent.objects.count()

    response = staff.post(f"{EDITOR}/add/", change_form_data(page))

    assert response.status_code == 200
    assert response.context["editor"].form.non_field_errors() == [
        "Cannot perform this operation on archived features"
    ]
    assert _nothing_written(events)


def test_editor_delete__archived_flag__refused_and_nothing_written(staff, admin_client, checkout):
    strategy = {"name": "default", "parameters": {}}
    added = admin_client.post(
        f"{FEATURES}/checkout/environments/development/strategies",
        json.dumps(strategy),
        content_type="application/json",
    )
    assert added.status_code == 200
    assert admin_client.delete(f"{FEATURES}/checkout").status_code == 202
    strategy_id = added.json()["id"]
    events = AuditEvent.objects.count()

    one = staff.post(f"{EDITOR}/{strategy_id}/delete/", {"post": "yes"})
    many = staff.post(
        f"{EDITOR}/",
        {"action": "delete_selected", "_selected_action": [strategy_id], "post": "yes"},
    )

    # As the API's 404: an archived flag's strategies stay (Django's own refusal for a bulk
    # delete that holds one).
    assert (one.status_code, many.status_code) == (403, 403)
    assert FeatureStrategy.objects.filter(pk=strategy_id).exists()
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(
    ("changes", "where", "message"),
    [
        pytest.param({"flag": "nope"}, "flag", "No flag is named nope.", id="unknown-flag"),
        pytest.param(
            {"environment": "staging"},
            "environment",
            "The flag's project (default) does not use this environment.",
            id="environment-not-used",
        ),
    ],
)
def test_editor_add__no_such_flag_environment__field_error(
    staff, checkout, changes, where, message
):
    from projects.models import Environment

    Environment.objects.create(name="staging", type="test", sort_order=150)
    events = AuditEvent.objects.count()

    response = staff.post(f"{EDITOR}/add/", change_form_data(_add_page(staff), **changes))

    assert response.status_code == 200
    assert response.context["editor"].form.errors == {where: [message]}
    assert _nothing_written(events)


def test_editor_add_page__starts_as_unleash_does(staff, checkout):
    response = _add_page(staff)

    form = response.context["editor"].form
    assert {key: form[key].value() for key in ("flag", "environment", "name", "rollout")} == {
        "flag": "checkout",
        "environment": "development",
        "name": "flexibleRollout",
        "rollout": 100,
    }
    assert (form["stickiness"].value(), form["group_id"].value()) == ("default", "checkout")
    assert [value for value, _ in form.fields["stickiness"].choices][:4] == [
        "default",
        "userId",
        "sessionId",
        "random",
    ]
    operators = [
        value
        for value, _ in response.context["editor"].constraints.forms[0].fields["operator"].choices
    ]
    assert operators[:15] == [
        "NOT_IN",
        "IN",
        "STR_ENDS_WITH",
        "STR_STARTS_WITH",
        "STR_CONTAINS",
        "NUM_EQ",
        "NUM_GT",
        "NUM_GTE",
        "NUM_LT",
        "NUM_LTE",
        "DATE_AFTER",
        "DATE_BEFORE",
        "SEMVER_EQ",
        "SEMVER_GT",
        "SEMVER_LT",
    ]
    page = response.content.decode()
    assert 'id="strategy-editor-settings"' in page
    assert "features/strategy_editor.js" in page


# --- the strategies in words ---------------------------------------------------------------


def _rollout(rollout: str, stickiness: str = "userId", **parameters: str) -> dict[str, Any]:
    return {
        "name": "flexibleRollout",
        "parameters": {
            "rollout": rollout,
            "stickiness": stickiness,
            "groupId": "shown",
            **parameters,
        },
    }


def _in(context: str, *values: str, **flags: bool) -> dict[str, Any]:
    return {"contextName": context, "operator": "IN", "values": list(values), **flags}


NORDICS = [_in("country", "NO", "SE")]


@pytest.mark.parametrize(
    ("enabled", "strategies", "summary"),
    [
        pytest.param(False, [_rollout("50")], "off", id="off"),
        pytest.param(True, [], "on for everyone", id="on-without-strategies"),
        pytest.param(True, [{"name": "default"}], "on for everyone", id="default"),
        pytest.param(True, [_rollout("100")], "on for everyone", id="rollout-100"),
        pytest.param(
            True,
            [{**_rollout("50"), "constraints": NORDICS}],
            "50 % by userId, if country IN NO, SE",
            id="the-issue's-example",
        ),
        pytest.param(
            True, [_rollout("50", "default")], "50 % by default stickiness", id="default-stickiness"
        ),
        pytest.param(True, [_rollout("25", "random")], "25 % at random", id="random"),
        pytest.param(True, [_rollout("0")], "nobody (0 %)", id="rollout-0"),
        pytest.param(
            True,
            [_rollout("10", groupId="checkout")],
            "10 % by userId (group checkout)",
            id="another-group",
        ),
        pytest.param(
            True,
            [{"name": "default", "constraints": NORDICS}],
            "on if country IN NO, SE",
            id="default-with-a-constraint",
        ),
        pytest.param(
            True,
            [
                {
                    "name": "default",
                    "constraints": [
                        {
                            "contextName": "appVersion",
                            "operator": "SEMVER_LT",
                            "value": "2.0.0",
                            "inverted": True,
                        },
                        _in("email", "A@x.io", caseInsensitive=True),
                    ],
                }
            ],
            "on if not appVersion SEMVER_LT 2.0.0 and email IN A@x.io (any case)",
            id="inverted-single-value-and-case-insensitive",
        ),
        pytest.param(
            True,
            [{"name": "default", "constraints": [_in("userId", *"abcdefg")]}],
            "on if userId IN a, b, c, d, e and 2 more",
            id="many-values",
        ),
        pytest.param(
            True,
            [{"name": "userWithId", "parameters": {"userIds": "a, b"}}],
            "on for users a, b",
            id="user-ids",
        ),
        pytest.param(
            True,
            [{"name": "remoteAddress", "parameters": {"IPs": "10.0.0.1"}}],
            "on for IPs 10.0.0.1",
            id="ips",
        ),
        pytest.param(
            True,
            [{"name": "applicationHostname", "parameters": {"hostNames": "web-1,web-2"}}],
            "on for hosts web-1, web-2",
            id="host-names",
        ),
        pytest.param(
            True,
            [{"name": "tenantRollout", "parameters": {"tenants": "7", "mode": "b"}}],
            "tenantRollout (mode=b, tenants=7)",
            id="custom",
        ),
        pytest.param(
            True,
            [
                {
                    **_rollout("50"),
                    "variants": [
                        {"name": "blue", "weight": 333, "weightType": "fix", "stickiness": "x"},
                        {
                            "name": "green",
                            "weight": 667,
                            "weightType": "variable",
                            "stickiness": "x",
                        },
                    ],
                }
            ],
            "50 % by userId (variants blue 33.3 %, green 66.7 %)",
            id="variants",
        ),
        pytest.param(
            True, [{**_rollout("50"), "title": "Nordics"}], "Nordics: 50 % by userId", id="title"
        ),
        pytest.param(
            True,
            [_rollout("50"), {"name": "default", "constraints": NORDICS}],
            "50 % by userId; or on if country IN NO, SE",
            id="two-strategies",
        ),
        pytest.param(
            True,
            [{**_rollout("50"), "disabled": True}, _rollout("20")],
            "20 % by userId",
            id="paused-left-out",
        ),
        pytest.param(
            True, [{**_rollout("50"), "disabled": True}], "on for everyone", id="only-paused"
        ),
        pytest.param(
            True,
            [_rollout("1"), _rollout("2"), _rollout("3"), _rollout("4"), _rollout("5")],
            "1 % by userId; or 2 % by userId; or 3 % by userId; or 2 more strategies",
            id="many-strategies",
        ),
        pytest.param(
            True,
            [_rollout("50"), {"name": "default"}],
            "on for everyone",
            id="one-for-everyone-wins",
        ),
    ],
)
def test_flag_list__rollout_column_per_environment(staff, enabled, strategies, summary):
    flag = FeatureFactory(name="shown")
    state = FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=enabled)
    FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=False)
    for order, fields in enumerate(strategies):
        FeatureStrategyFactory(feature_environment=state, sort_order=order, **fields)

    response = staff.get(FLAGS)

    [shown] = response.context["cl"].result_list
    assert shown.rollout_lines == [("development", "off"), ("production", summary)]
    assert summary in response.content.decode().replace("&#x27;", "'")


def test_flag_list__segments_named(staff):
    flag = FeatureFactory(name="shown")
    state = FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=True)
    strategy = FeatureStrategyFactory(feature_environment=state, **_rollout("50"))
    for name in ("beta-testers", "nordics"):
        strategy.segment_links.create(segment=Segment.objects.create(name=name))

    response = staff.get(FLAGS)

    [shown] = response.context["cl"].result_list
    assert shown.rollout_lines == [
        ("development", "50 % by userId, if in segment beta-testers and in segment nordics")
    ]


@pytest.mark.parametrize("flags", [1, 30])
def test_flag_list__with_strategies__query_count_does_not_grow(
    staff, flags, django_assert_max_num_queries
):
    segment = Segment.objects.create(name="beta-testers")
    for index in range(flags):
        flag = FeatureFactory(name=f"flag-{index:02}")
        for environment in ("development", "production"):
            state = FeatureEnvironmentFactory(
                feature=flag, environment_id=environment, enabled=True
            )
            for order in range(2):
                strategy = FeatureStrategyFactory(
                    feature_environment=state, sort_order=order, constraints=NORDICS
                )
                strategy.segment_links.create(segment=segment)

    # Session, user, roles, environments, projects (filter), count, page, environments,
    # tags, strategies with their segments: the same for 1 flag as for 30.
    with django_assert_max_num_queries(10):
        response = staff.get(FLAGS)

    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == flags
    assert response.context["cl"].result_list[0].rollout_lines[0] == (
        "development",
        "50 % by default stickiness (group g), if in segment beta-testers and country IN NO, SE; "
        "or 50 % by default stickiness (group g), if in segment beta-testers and country IN NO, SE",
    )


def test_flag_page__rollout_and_strategies_per_environment(staff):
    flag = FeatureFactory(name="shown")
    state = FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=True)
    FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=False)
    strategy = FeatureStrategyFactory(
        feature_environment=state, **_rollout("50"), constraints=NORDICS
    )

    response = staff.get(f"{FLAGS}shown/change/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "<p>50 % by userId, if country IN NO, SE</p>" in page
    assert "<p>off</p>" in page
    assert (
        f'<a class="strategy-link" href="{EDITOR}/{strategy.pk}/change/">'
        "50 % by userId, if country IN NO, SE</a>"
    ) in page
    assert f'href="{EDITOR}/add/?flag=shown&amp;environment=production">Add a strategy' in page


def test_strategy_editor_page__shows_the_strategy_in_words(staff):
    flag = FeatureFactory(name="shown")
    state = FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=True)
    strategy = FeatureStrategyFactory(feature_environment=state, **_rollout("50"))

    response = staff.get(f"{EDITOR}/{strategy.pk}/change/")

    assert response.status_code == 200
    assert '<span id="strategy-summary">50 % by userId</span>' in response.content.decode()


def test_strategy_list__summary_column(staff, django_assert_max_num_queries):
    flag = FeatureFactory(name="shown")
    state = FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=True)
    for order in range(5):
        strategy = FeatureStrategyFactory(
            feature_environment=state, sort_order=order, **_rollout(str(order))
        )
        strategy.segment_links.create(segment=Segment.objects.create(name=f"s{order}"))

    with django_assert_max_num_queries(10):
        response = staff.get(f"{EDITOR}/")

    assert response.status_code == 200
    assert "1 % by userId, if in segment s1" in response.content.decode()
