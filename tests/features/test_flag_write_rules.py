"""The write rules Unleash 8.2 applies to a flag's strategies and environments, checked on the
reference server before they were written: the default strategy when no enabled strategy is
left, `shouldActivateDisabledStrategies`, an environment turned off when its last enabled
strategy is paused, variant weights fixed and sorted as `fixVariantWeights` does, and numbers
taken where Unleash's validator coerces them into strings."""

from __future__ import annotations

import json
from html import escape

import pytest
from django.test import Client

from features.models import FeatureEnvironment, FeatureStrategy, Segment
from flagadmin.core.models import AuditEvent, Role
from tests.admin_forms import change_form_data, editor_rows
from tests.conftest import assert_error
from tests.factories import (
    FeatureEnvironmentFactory,
    FeatureFactory,
    FeatureStrategyFactory,
    UserFactory,
)

FEATURES = "/api/admin/projects/default/features"
FLAG = f"{FEATURES}/checkout"
ENVIRONMENT = f"{FLAG}/environments/development"
STRATEGIES = f"{ENVIRONMENT}/strategies"


def post(client, url: str, body=None):
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def put(client, url: str, body):
    return client.put(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def flag(admin_client) -> str:
    assert post(admin_client, FEATURES, {"name": "checkout"}).status_code == 201
    return "checkout"


def _enabled() -> bool:
    return FeatureEnvironment.objects.get(
        feature_id="checkout", environment_id="development"
    ).enabled


def _strategies() -> list[tuple[str, bool]]:
    return list(
        FeatureStrategy.objects.order_by("sort_order", "created_at").values_list("name", "disabled")
    )


def _event_types(since: int) -> list[str]:
    return list(
        AuditEvent.objects.filter(id__gt=since).order_by("id").values_list("type", flat=True)
    )


def _last_event_id() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


# --- turning on --------------------------------------------------------------------------------


def test_on__only_paused_strategies__adds_unleash_default(admin_client, flag):
    post(admin_client, STRATEGIES, {"name": "remoteAddress", "disabled": True})
    before = _last_event_id()

    response = post(admin_client, f"{ENVIRONMENT}/on")

    assert response.status_code == 200
    assert _enabled()
    assert _strategies() == [("remoteAddress", True), ("flexibleRollout", False)]
    added = FeatureStrategy.objects.get(name="flexibleRollout")
    assert added.parameters == {"rollout": "100", "stickiness": "default", "groupId": "checkout"}
    assert _event_types(before) == ["feature-strategy-add", "feature-environment-enabled"]
    # The answer is the flag as the write left it.
    development = response.json()["environments"][0]
    assert [s["name"] for s in development["strategies"]] == ["remoteAddress", "flexibleRollout"]


def test_on__activate_disabled__enables_paused_adds_nothing(admin_client, flag):
    post(admin_client, STRATEGIES, {"name": "remoteAddress", "disabled": True})
    post(admin_client, STRATEGIES, {"name": "default", "disabled": True})
    before = _last_event_id()

    response = post(admin_client, f"{ENVIRONMENT}/on?shouldActivateDisabledStrategies=true")

    assert response.status_code == 200
    assert _enabled()
    assert _strategies() == [("remoteAddress", False), ("default", False)]
    assert _event_types(before) == [
        "feature-strategy-update",
        "feature-strategy-update",
        "feature-environment-enabled",
    ]
    update = AuditEvent.objects.filter(type="feature-strategy-update").first()
    assert (update.pre_data["disabled"], update.data["disabled"]) == (True, False)


@pytest.mark.parametrize("value", ["false", "TRUE", "1", ""])
def test_on__activate_disabled_other_than_true__default_added(admin_client, flag, value):
    post(admin_client, STRATEGIES, {"name": "remoteAddress", "disabled": True})

    post(admin_client, f"{ENVIRONMENT}/on?shouldActivateDisabledStrategies={value}")

    assert _strategies() == [("remoteAddress", True), ("flexibleRollout", False)]


def test_on__activate_disabled__no_strategy__default_added(admin_client, flag):
    post(admin_client, f"{ENVIRONMENT}/on?shouldActivateDisabledStrategies=true")

    assert _strategies() == [("flexibleRollout", False)]


def test_on__already_on_all_paused__default_added_no_toggle_event(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "remoteAddress"}).json()
    post(admin_client, f"{ENVIRONMENT}/on")
    FeatureStrategy.objects.filter(pk=created["id"]).update(disabled=True)  # as stored earlier
    before = _last_event_id()

    post(admin_client, f"{ENVIRONMENT}/on")

    assert _strategies() == [("remoteAddress", True), ("flexibleRollout", False)]
    assert _event_types(before) == ["feature-strategy-add"]


# --- pausing and deleting ----------------------------------------------------------------------


def test_pause_last_enabled_strategy__environment_turned_off(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "remoteAddress"}).json()
    post(admin_client, f"{ENVIRONMENT}/on")
    before = _last_event_id()

    response = put(admin_client, f"{STRATEGIES}/{created['id']}", {**created, "disabled": True})

    assert response.status_code == 200
    assert response.json()["disabled"] is True
    assert not _enabled()
    assert _event_types(before) == ["feature-strategy-update", "feature-environment-disabled"]


def test_pause_one_of_two__environment_stays_on(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "remoteAddress"}).json()
    post(admin_client, STRATEGIES, {"name": "default"})
    post(admin_client, f"{ENVIRONMENT}/on")

    put(admin_client, f"{STRATEGIES}/{created['id']}", {**created, "disabled": True})

    assert _enabled()


def test_pause_while_off__stays_off_no_event(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "remoteAddress"}).json()
    before = _last_event_id()

    put(admin_client, f"{STRATEGIES}/{created['id']}", {**created, "disabled": True})

    assert not _enabled()
    assert _event_types(before) == ["feature-strategy-update"]


def test_delete_last_strategy__environment_turned_off(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "remoteAddress"}).json()
    post(admin_client, f"{ENVIRONMENT}/on")

    assert admin_client.delete(f"{STRATEGIES}/{created['id']}").status_code == 200

    assert not _enabled()


# --- variant weights ---------------------------------------------------------------------------


def _variant(name: str, weight: int, weight_type: str) -> dict:
    return {"name": name, "weight": weight, "weightType": weight_type, "stickiness": "default"}


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        pytest.param(
            [_variant("c", 0, "variable"), _variant("a", 200, "fix"), _variant("B", 0, "variable")],
            [
                _variant("a", 200, "fix"),
                _variant("B", 400, "variable"),
                _variant("c", 400, "variable"),
            ],
            id="fix-and-variable-sorted-as-localeCompare",
        ),
        pytest.param(
            [
                _variant("z", 5, "variable"),
                _variant("y", 0, "variable"),
                _variant("x", 999, "variable"),
            ],
            [
                _variant("x", 333, "variable"),
                _variant("y", 333, "variable"),
                _variant("z", 334, "variable"),
            ],
            id="remainder-to-the-first-as-sent",
        ),
        pytest.param(
            [_variant("a", 1000, "fix"), _variant("b", 0, "variable")],
            [_variant("a", 1000, "fix"), _variant("b", 0, "variable")],
            id="fix-takes-all",
        ),
        pytest.param(
            [
                _variant("_x", 0, "variable"),
                _variant("x", 0, "variable"),
                _variant("-x", 0, "variable"),
            ],
            [
                _variant("_x", 334, "variable"),
                _variant("-x", 333, "variable"),
                _variant("x", 333, "variable"),
            ],
            id="punctuation-first",
        ),
    ],
)
def test_strategy_variants__weights_fixed_and_sorted(admin_client, flag, sent, stored):
    response = post(admin_client, STRATEGIES, {"name": "default", "variants": sent})

    assert response.status_code == 200
    assert response.json()["variants"] == stored
    assert FeatureStrategy.objects.get().variants == stored
    client_flag = FeatureStrategy.objects.get()
    assert client_flag.variants == stored


def test_strategy_variants__update_fixes_weights_too(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()
    sent = [_variant("b", 0, "variable"), _variant("a", 100, "variable")]

    response = put(admin_client, f"{STRATEGIES}/{created['id']}", {**created, "variants": sent})

    assert response.json()["variants"] == [
        _variant("a", 500, "variable"),
        _variant("b", 500, "variable"),
    ]


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        pytest.param(
            [_variant("a", 200, "fix")],
            'must contain at least one "variable" variant',
            id="no-variable",
        ),
        pytest.param(
            [_variant("a", 800, "fix"), _variant("b", 800, "fix"), _variant("c", 1, "variable")],
            "must not have fix weights adding up to more than 1000 (the traffic distribution "
            "total must equal 100%)",
            id="fixed-over-1000",
        ),
    ],
)
def test_strategy_variants__refused_as_unleash__400_nothing_stored(
    admin_client, flag, variants, message
):
    response = post(admin_client, STRATEGIES, {"name": "default", "variants": variants})

    body = assert_error(response, 400, "ValidationError")
    [detail] = body["details"]
    assert detail["path"] == "/body/variants"
    assert detail["message"].startswith(f"The `/body/variants` property {message}. You sent [")
    assert not FeatureStrategy.objects.exists()


# --- numbers where Unleash takes strings -------------------------------------------------------


def test_numbers_in_string_fields__stored_as_unleash_writes_them(admin_client, flag):
    body = {
        "name": "flexibleRollout",
        "parameters": {"rollout": 50, "groupId": "g"},
        "constraints": [
            {"contextName": "n", "operator": "NUM_GT", "value": 5},
            {"contextName": "m", "operator": "IN", "values": [1, 2.5, "x"]},
        ],
    }

    response = post(admin_client, STRATEGIES, body)

    assert response.status_code == 200
    stored = FeatureStrategy.objects.get()
    assert stored.parameters == {"rollout": "50", "groupId": "g", "stickiness": "default"}
    assert [c.get("value") for c in stored.constraints] == ["5", None]
    assert stored.constraints[1]["values"] == ["1", "2.5", "x"]


# --- the same rules through the Django admin ---------------------------------------------------


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(UserFactory(username="operator", root_role_id=Role.ADMIN))
    return client


def _admin_strategy(**fields) -> FeatureStrategy:
    state = FeatureEnvironmentFactory(
        feature=FeatureFactory(name="rolled"), environment_id="development", enabled=True
    )
    return FeatureStrategyFactory(feature_environment=state, **fields)


def test_admin_pause_last_strategy__environment_turned_off(staff):
    strategy = _admin_strategy()
    url = f"/admin/features/featurestrategy/{strategy.pk}/change/"
    before = _last_event_id()

    response = staff.post(url, change_form_data(staff.get(url), disabled="on"))

    assert response.status_code == 302, response.content.decode()[:3000]
    assert not FeatureEnvironment.objects.get(feature_id="rolled").enabled
    assert _event_types(before) == ["feature-strategy-update", "feature-environment-disabled"]


def _variant_row(name: str, percent: str, weight_type: str) -> dict:
    # A variant as the strategy editor's row: its weight in percent.
    return {"name": name, "weight": percent, "weight_type": weight_type, "stickiness": "default"}


def test_admin_variants__weights_fixed_and_sorted(staff):
    strategy = _admin_strategy()
    url = f"/admin/features/featurestrategy/{strategy.pk}/change/"
    sent = [_variant_row("b", "0", "variable"), _variant_row("a", "10", "fix")]

    response = staff.post(url, change_form_data(staff.get(url), **editor_rows("variants", sent)))

    assert response.status_code == 302, response.content.decode()[:3000]
    strategy.refresh_from_db()
    assert strategy.variants == [_variant("a", 100, "fix"), _variant("b", 900, "variable")]


def test_admin_variants__no_variable__refused_on_the_page(staff):
    strategy = _admin_strategy()
    url = f"/admin/features/featurestrategy/{strategy.pk}/change/"
    sent = [_variant_row("a", "10", "fix")]

    response = staff.post(url, change_form_data(staff.get(url), **editor_rows("variants", sent)))

    assert response.status_code == 200
    assert escape('must contain at least one "variable" variant') in response.content.decode()
    strategy.refresh_from_db()
    assert strategy.variants == []


def test_admin_delete_last_strategy__environment_turned_off(staff):
    strategy = _admin_strategy()

    response = staff.post(f"/admin/features/featurestrategy/{strategy.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not FeatureEnvironment.objects.get(feature_id="rolled").enabled
    assert list(AuditEvent.objects.order_by("id").values_list("type", flat=True)) == [
        "feature-strategy-remove",
        "feature-environment-disabled",
    ]


def test_admin_environment_variants__weights_fixed_and_sorted(admin_client, flag):
    from features.models import Feature
    from features.services import set_feature_environment_variants

    set_feature_environment_variants(
        feature=Feature.objects.get(pk="checkout"),
        environment="development",
        variants=[{"name": "z", "weight": 0}, {"name": "Y", "weight": 10}],
        actor=None,
    )

    state = FeatureEnvironment.objects.get(feature_id="checkout", environment_id="development")
    assert state.variants == [
        {"name": "Y", "weight": 500, "weightType": "variable"},
        {"name": "z", "weight": 500, "weightType": "variable"},
    ]


# --- the bulk toggle ---------------------------------------------------------------------------

BULK = "/api/admin/projects/default/bulk_features/environments/development"


def test_bulk_on__activate_disabled_and_default_strategy(admin_client, flag):
    post(admin_client, STRATEGIES, {"name": "remoteAddress", "disabled": True})
    assert post(admin_client, FEATURES, {"name": "bare"}).status_code == 201

    response = post(
        admin_client,
        f"{BULK}/on?shouldActivateDisabledStrategies=true",
        {"features": ["checkout", "bare"]},
    )

    assert response.status_code == 200
    assert response.content == b""
    states = FeatureEnvironment.objects.filter(environment_id="development")
    assert dict(states.values_list("feature_id", "enabled")) == {"checkout": True, "bare": True}
    assert sorted(
        FeatureStrategy.objects.values_list("feature_environment__feature_id", "name", "disabled")
    ) == [
        ("bare", "flexibleRollout", False),
        ("checkout", "remoteAddress", False),
    ]


def test_bulk_off__all_named_off(admin_client, flag):
    post(admin_client, f"{ENVIRONMENT}/on")

    response = post(admin_client, f"{BULK}/off", {"features": ["checkout"]})

    assert response.status_code == 200
    assert not _enabled()


@pytest.mark.parametrize(
    ("names", "status", "name", "message"),
    [
        pytest.param(
            ["checkout", "nope"],
            404,
            "NotFoundError",
            'There\'s no feature named "nope" in project "default".',
            id="unknown",
        ),
        pytest.param(["checkout", "gone"], 400, "ArchivedFeatureError", None, id="archived"),
    ],
)
def test_bulk_on__one_refused__none_changed(admin_client, flag, names, status, name, message):
    assert post(admin_client, FEATURES, {"name": "gone"}).status_code == 201
    admin_client.delete(f"{FEATURES}/gone")
    before = _last_event_id()

    response = post(admin_client, f"{BULK}/on", {"features": names})

    body = assert_error(response, status, name)
    if message:
        assert body["message"] == message
    assert not _enabled()
    assert not FeatureStrategy.objects.exists()
    assert _event_types(before) == []


def test_bulk_on__features_missing__400(admin_client, flag):
    body = assert_error(post(admin_client, f"{BULK}/on", {}), 400, "ValidationError")

    assert body["details"][0]["path"] == "/body/features"


def test_bulk_on__viewer__403(viewer_client, flag):
    assert_error(
        post(viewer_client, f"{BULK}/on", {"features": ["checkout"]}), 403, "NoAccessError"
    )


def _served(client) -> dict[str, dict]:
    response = client.get("/api/client/features")
    assert response.status_code == 200
    return {f["name"]: f for f in response.json()["features"]}


def test_bulk_on_and_off__events_per_flag_and_what_sdks_get(
    admin_client, client_token_client, flag
):
    assert post(admin_client, FEATURES, {"name": "bare"}).status_code == 201
    before = _last_event_id()

    on = post(admin_client, f"{BULK}/on", {"features": ["checkout", "bare"]})

    assert (on.status_code, on.content) == (200, b"")
    served = _served(client_token_client)
    assert (served["checkout"]["enabled"], served["bare"]["enabled"]) == (True, True)
    enabled = AuditEvent.objects.filter(id__gt=before, type="feature-environment-enabled")
    assert sorted(enabled.values_list("feature_name", "project", "environment")) == [
        ("bare", "default", "development"),
        ("checkout", "default", "development"),
    ]
    before = _last_event_id()

    off = post(admin_client, f"{BULK}/off", {"features": ["checkout", "bare"]})

    assert (off.status_code, off.content) == (200, b"")
    served = _served(client_token_client)
    assert (served["checkout"]["enabled"], served["bare"]["enabled"]) == (False, False)
    disabled = AuditEvent.objects.filter(id__gt=before).order_by("feature_name")
    assert list(disabled.values_list("type", "feature_name", "project", "environment")) == [
        ("feature-environment-disabled", "bare", "default", "development"),
        ("feature-environment-disabled", "checkout", "default", "development"),
    ]


def test_bulk_off__unknown_flag__404_none_changed(admin_client, flag):
    post(admin_client, f"{ENVIRONMENT}/on")
    before = _last_event_id()

    response = post(admin_client, f"{BULK}/off", {"features": ["checkout", "nope"]})

    body = assert_error(response, 404, "NotFoundError")
    assert body["message"] == 'There\'s no feature named "nope" in project "default".'
    assert _enabled()
    assert _event_types(before) == []


def test_bulk_off__unknown_environment__404(admin_client, flag):
    response = post(
        admin_client,
        "/api/admin/projects/default/bulk_features/environments/nope/off",
        {"features": ["checkout"]},
    )

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'Environment "nope" is not enabled in project "default" for flag "checkout"'
    )


def test_bulk_off__features_missing__400(admin_client, flag):
    body = assert_error(post(admin_client, f"{BULK}/off", {}), 400, "ValidationError")

    assert body["details"] == [
        {
            "path": "/body/features",
            "message": "The `/body/features` property is required. It was not present on the "
            "data you sent.",
        }
    ]


def test_bulk_off__viewer__403(viewer_client, admin_client, flag):
    post(admin_client, f"{ENVIRONMENT}/on")

    response = post(viewer_client, f"{BULK}/off", {"features": ["checkout"]})

    assert assert_error(response, 403, "NoAccessError")["permissions"] == ["UPDATE_FEATURE"]
    assert _enabled()


# --- PUT as Unleash's ---------------------------------------------------------------------------


def test_put_without_disabled__a_paused_strategy_stays_paused(admin_client, flag):
    created = post(admin_client, STRATEGIES, {"name": "default", "disabled": True}).json()

    response = put(admin_client, f"{STRATEGIES}/{created['id']}", {"name": "default"})

    assert response.json()["disabled"] is True
    post(admin_client, f"{ENVIRONMENT}/on")
    assert _strategies() == [("default", True), ("flexibleRollout", False)]


def test_put__sort_order_title_and_segments_left_as_they_are(admin_client, flag):
    segment = Segment.objects.create(name="beta")
    created = post(
        admin_client,
        STRATEGIES,
        {"name": "default", "title": "kept", "sortOrder": 7, "segments": [segment.pk]},
    ).json()

    response = put(
        admin_client, f"{STRATEGIES}/{created['id']}", {"name": "default", "sortOrder": 1}
    )

    body = response.json()
    assert (body["sortOrder"], body["title"], body["segments"]) == (7, "kept", [segment.pk])


def test_put__title_and_segments_given__replaced(admin_client, flag):
    segment = Segment.objects.create(name="beta")
    created = post(
        admin_client, STRATEGIES, {"name": "default", "title": "old", "segments": [segment.pk]}
    ).json()

    response = put(
        admin_client,
        f"{STRATEGIES}/{created['id']}",
        {"name": "default", "title": "new", "segments": []},
    )

    assert (response.json()["title"], response.json()["segments"]) == ("new", [])


# --- set-sort-order ----------------------------------------------------------------------------


def test_set_sort_order__reorders_and_records_the_order(admin_client, flag):
    first = post(admin_client, STRATEGIES, {"name": "default"}).json()
    second = post(admin_client, STRATEGIES, {"name": "remoteAddress"}).json()

    response = post(
        admin_client,
        f"{STRATEGIES}/set-sort-order",
        [{"id": first["id"], "sortOrder": 5}, {"id": second["id"], "sortOrder": 1}],
    )

    assert response.status_code == 200
    assert response.content == b""
    assert [s["id"] for s in admin_client.get(STRATEGIES).json()] == [second["id"], first["id"]]
    event = AuditEvent.objects.get(type="strategy-order-changed")
    assert event.pre_data == {"strategyIds": [first["id"], second["id"]]}
    assert event.data == {"strategyIds": [second["id"], first["id"]]}


def test_set_sort_order__unknown_strategy__400_nothing_changed(admin_client, flag):
    first = post(admin_client, STRATEGIES, {"name": "default"}).json()

    response = post(
        admin_client,
        f"{STRATEGIES}/set-sort-order",
        [{"id": first["id"], "sortOrder": 5}, {"id": "nope", "sortOrder": 1}],
    )

    assert_error(response, 400, "ValidationError")
    assert FeatureStrategy.objects.get().sort_order == 0
    assert not AuditEvent.objects.filter(type="strategy-order-changed").exists()


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"id": "x", "sortOrder": 1}, id="not-a-list"),
        pytest.param([{"id": "x"}], id="no-sort-order"),
        pytest.param([{"id": 5, "sortOrder": 1}], id="id-not-string"),
    ],
)
def test_set_sort_order__invalid_body__400(admin_client, flag, body):
    assert_error(post(admin_client, f"{STRATEGIES}/set-sort-order", body), 400, "ValidationError")


def test_set_sort_order__sdks_get_the_strategies_in_the_new_order(
    admin_client, client_token_client, flag
):
    first = post(admin_client, STRATEGIES, {"name": "default"}).json()
    second = post(admin_client, STRATEGIES, {"name": "remoteAddress"}).json()
    post(admin_client, f"{ENVIRONMENT}/on")
    served = _served(client_token_client)["checkout"]["strategies"]
    assert [s["name"] for s in served] == ["default", "remoteAddress"]

    post(
        admin_client,
        f"{STRATEGIES}/set-sort-order",
        [{"id": first["id"], "sortOrder": 5}, {"id": second["id"], "sortOrder": 1}],
    )

    served = _served(client_token_client)["checkout"]["strategies"]
    assert [s["name"] for s in served] == ["remoteAddress", "default"]  # SDKs get no ids


def test_set_sort_order__unknown_flag__404(admin_client, flag):
    response = post(
        admin_client,
        f"{FEATURES}/nope/environments/development/strategies/set-sort-order",
        [{"id": "x", "sortOrder": 1}],
    )

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'There\'s no feature named "nope" in project "default".'
    )


def test_set_sort_order__viewer__403_nothing_changed(viewer_client, admin_client, flag):
    first = post(admin_client, STRATEGIES, {"name": "default"}).json()

    response = post(
        viewer_client, f"{STRATEGIES}/set-sort-order", [{"id": first["id"], "sortOrder": 5}]
    )

    assert assert_error(response, 403, "NoAccessError")["permissions"] == ["UPDATE_FEATURE"]
    assert FeatureStrategy.objects.get().sort_order == 0
    assert not AuditEvent.objects.filter(type="strategy-order-changed").exists()
