"""Per-flag limits (features.limits) as Unleash 8.2 answers them: strategies per flag
environment, constraints per strategy, values per constraint, segments per strategy and values
per segment, through the API and the Django admin. Each refusal stores nothing. The messages
are the reference's, sent the same over-limit requests."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from features.models import FeatureEnvironment, FeatureStrategy, Segment
from flagadmin.core.models import AuditEvent, Role
from tests.admin_forms import change_form_data, editor_rows
from tests.conftest import assert_error
from tests.factories import FeatureStrategyFactory, UserFactory

FEATURES = "/api/admin/projects/default/features"
STRATEGIES = f"{FEATURES}/checkout/environments/development/strategies"


def post(client, url: str, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def put(client, url: str, body):
    return client.put(url, json.dumps(body), content_type="application/json")


def _in(count: int, context: str = "userId") -> dict:
    return {"contextName": context, "operator": "IN", "values": [str(i) for i in range(count)]}


def _exceeds(resource: str, limit: int) -> str:
    return (
        f"Failed to create {resource}. You can't create more than the established limit of {limit}."
    )


def _assert_exceeds(response, message: str) -> None:
    error = assert_error(response, 400, "ExceedsLimitError")
    assert error == {
        "id": error["id"],
        "name": "ExceedsLimitError",
        "message": message,
        "details": [{"message": message}],
    }


@pytest.fixture
def flag(admin_client) -> FeatureEnvironment:
    assert post(admin_client, FEATURES, {"name": "checkout"}).status_code == 201
    return FeatureEnvironment.objects.get(feature_id="checkout", environment_id="development")


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.ADMIN))
    return client


def _strategy_events() -> int:
    return AuditEvent.objects.filter(type__startswith="feature-strategy").count()


# --- strategies per flag environment ----------------------------------------------------------


def test_add_strategy__at_the_default_limit_of_30__400_exceeds_limit(admin_client, flag):
    FeatureStrategyFactory.create_batch(30, feature_environment=flag)

    response = post(admin_client, STRATEGIES, {"name": "default"})

    _assert_exceeds(response, _exceeds("strategy", 30))
    assert flag.strategies.count() == 30
    assert _strategy_events() == 0


def test_add_strategy__limit_from_the_setting__last_place_taken_then_refused(
    admin_client, flag, settings
):
    settings.FEATURE_ENVIRONMENT_STRATEGIES_LIMIT = 2
    assert post(admin_client, STRATEGIES, {"name": "default"}).status_code == 200
    assert post(admin_client, STRATEGIES, {"name": "default"}).status_code == 200

    response = post(admin_client, STRATEGIES, {"name": "default"})

    _assert_exceeds(response, _exceeds("strategy", 2))
    assert flag.strategies.count() == 2


def test_update_strategy__environment_over_the_limit__200(admin_client, flag, settings):
    # As Unleash: the count is checked when a strategy is added, never on an update.
    created = post(admin_client, STRATEGIES, {"name": "default"}).json()
    FeatureStrategyFactory.create_batch(2, feature_environment=flag)
    settings.FEATURE_ENVIRONMENT_STRATEGIES_LIMIT = 1

    response = put(admin_client, f"{STRATEGIES}/{created['id']}", {"name": "default"})

    assert response.status_code == 200, response.content


def test_turn_on__only_paused_strategies_at_the_limit__400_nothing_changes(
    admin_client, flag, settings
):
    # Turning on adds Unleash's default strategy when none is enabled: a creation, limited.
    settings.FEATURE_ENVIRONMENT_STRATEGIES_LIMIT = 1
    FeatureStrategyFactory(feature_environment=flag, disabled=True)

    response = admin_client.post(f"{FEATURES}/checkout/environments/development/on")

    _assert_exceeds(response, _exceeds("strategy", 1))
    flag.refresh_from_db()
    assert flag.enabled is False
    assert flag.strategies.count() == 1


# --- constraints per strategy, values per constraint ------------------------------------------


@pytest.mark.parametrize(
    ("constraints", "message"),
    [
        pytest.param([_in(1)] * 31, _exceeds("constraints", 30), id="31-constraints"),
        pytest.param(
            [_in(1), _in(251, "tenant")],
            _exceeds("constraint values for tenant", 250),
            id="251-values",
        ),
    ],
)
def test_add_strategy__over_a_constraint_limit__400_exceeds_limit(
    admin_client, flag, constraints, message
):
    response = post(admin_client, STRATEGIES, {"name": "default", "constraints": constraints})

    _assert_exceeds(response, message)
    assert not FeatureStrategy.objects.exists()
    assert _strategy_events() == 0


@pytest.mark.parametrize(
    "constraints",
    [
        pytest.param([_in(1)] * 30, id="30-constraints"),
        pytest.param([_in(250)], id="250-values"),
    ],
)
def test_add_strategy__at_a_constraint_limit__200(admin_client, flag, constraints):
    response = post(admin_client, STRATEGIES, {"name": "default", "constraints": constraints})

    assert response.status_code == 200, response.content
    assert response.json()["constraints"] == [
        {**c, "caseInsensitive": False, "inverted": False} for c in constraints
    ]


@pytest.mark.parametrize(
    ("stored", "sent", "message"),
    [
        pytest.param([_in(1)] * 3, [_in(1)] * 3, None, id="constraints-as-many-as-before"),
        pytest.param([_in(1)] * 3, [_in(1)] * 2, None, id="constraints-fewer"),
        pytest.param(
            [_in(1)] * 3, [_in(1)] * 4, _exceeds("constraints", 2), id="constraints-grown"
        ),
        pytest.param([_in(5)], [_in(5)], None, id="values-as-many-as-before"),
        pytest.param([_in(5)], [_in(4)], None, id="values-fewer"),
        pytest.param(
            [_in(5)], [_in(6)], _exceeds("constraint values for userId", 3), id="values-grown"
        ),
        pytest.param(
            [_in(5)],
            [_in(1), _in(5)],
            _exceeds("constraint values for userId", 3),
            id="values-list-length-changed",
        ),
    ],
)
def test_update_strategy__lists_over_a_lowered_limit__only_growth_refused(
    admin_client, flag, settings, stored, sent, message
):
    # As Unleash's validateConstraintsLimit: lists stored before a limit was lowered may stay.
    strategy = FeatureStrategyFactory(feature_environment=flag, name="default", parameters={})
    FeatureStrategy.objects.filter(pk=strategy.pk).update(constraints=stored)
    settings.CONSTRAINTS_LIMIT = 2
    settings.CONSTRAINT_VALUES_LIMIT = 3

    response = put(
        admin_client, f"{STRATEGIES}/{strategy.pk}", {"name": "default", "constraints": sent}
    )

    strategy.refresh_from_db()
    if message is None:
        assert response.status_code == 200, response.content
        assert [len(c["values"]) for c in strategy.constraints] == [len(c["values"]) for c in sent]
    else:
        _assert_exceeds(response, message)
        assert strategy.constraints == stored
        assert _strategy_events() == 0


# --- segments per strategy --------------------------------------------------------------------


def test_add_strategy__six_segments__400_and_nothing_stored(admin_client, flag):
    ids = [Segment.objects.create(name=f"segment-{n}").pk for n in range(6)]

    response = post(admin_client, STRATEGIES, {"name": "default", "segments": ids})

    message = "Strategies may not have more than 5 segments"
    error = assert_error(response, 400, "ValidationError")
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": message,
        "details": [{"path": "/body/segments", "message": message}],
    }
    assert not FeatureStrategy.objects.exists()


def test_update_strategy__six_segments__400_and_segments_kept(admin_client, flag):
    ids = [Segment.objects.create(name=f"segment-{n}").pk for n in range(6)]
    created = post(admin_client, STRATEGIES, {"name": "default", "segments": ids[:5]}).json()

    response = put(
        admin_client, f"{STRATEGIES}/{created['id']}", {"name": "default", "segments": ids}
    )

    assert_error(response, 400, "ValidationError")
    assert admin_client.get(f"{STRATEGIES}/{created['id']}").json()["segments"] == ids[:5]


# --- the Django admin -------------------------------------------------------------------------


def _strategy_add_page(staff, flag: FeatureEnvironment):
    # The flag page's "Add a strategy" link (the strategy editor, features.admin_strategies).
    query = f"flag={flag.feature_id}&environment={flag.environment_id}"
    return staff.get(f"/admin/features/featurestrategy/add/?{query}")


def _in_rows(count: int) -> list[dict]:
    """`count` constraints as the editor's rows."""
    return [{"context_name": "userId", "operator": "IN", "values": "1"}] * count


def test_admin_add_strategy__environment_full__form_error_and_nothing_stored(staff, flag, settings):
    settings.FEATURE_ENVIRONMENT_STRATEGIES_LIMIT = 1
    FeatureStrategyFactory(feature_environment=flag)
    data = change_form_data(_strategy_add_page(staff, flag), name="default")

    response = staff.post("/admin/features/featurestrategy/add/", data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors == {"__all__": [_exceeds("strategy", 1)]}
    assert flag.strategies.count() == 1


def test_admin_add_strategy__too_many_constraints__form_error(staff, flag):
    data = change_form_data(
        _strategy_add_page(staff, flag), name="default", **editor_rows("constraints", _in_rows(31))
    )

    response = staff.post("/admin/features/featurestrategy/add/", data)

    assert response.status_code == 200
    [constraints, _] = response.context["editor_formsets"]
    assert constraints.non_form_errors() == [_exceeds("constraints", 30)]
    assert not FeatureStrategy.objects.exists()


def test_admin_change_strategy__six_segments__form_error_and_segments_kept(staff, flag):
    strategy = FeatureStrategyFactory(feature_environment=flag)
    ids = [Segment.objects.create(name=f"segment-{n}").pk for n in range(6)]
    url = f"/admin/features/featurestrategy/{strategy.pk}/change/"
    data = change_form_data(staff.get(url), segments=ids)

    response = staff.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors == {"segments": ["Strategies may not have more than 5 segments"]}
    assert not strategy.segment_links.exists()


def test_admin_add_segment__over_1000_values__form_error_and_nothing_stored(staff, db):
    data = {
        "name": "big",
        "constraints": json.dumps([_in(600), _in(401, "tenant")]),
        "created_by": "",
    }

    response = staff.post("/admin/features/segment/add/", data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors == {"constraints": ["Segments may not have more than 1000 values"]}
    assert not Segment.objects.exists()


# --- REGEX values: the check's cost bounded (features.regexes) ----------------------------------


def _regex(value: str) -> dict:
    return {"contextName": "userId", "operator": "REGEX", "value": value}


@pytest.mark.parametrize(
    ("constraints", "path", "message"),
    [
        pytest.param(
            [_regex("a" * 257)],
            "/body/constraints/0/value",
            "must be a regular expression of at most 256 characters",
            id="pattern-too-long",
        ),
        pytest.param(
            [_regex(f"a{n}") for n in range(31)],
            "/body/constraints",
            "must hold at most 30 distinct REGEX patterns; it holds 31",
            id="31-distinct-patterns",
        ),
        pytest.param(
            [_regex(f"{n:03d}" + "c" * 253) for n in range(9)],
            "/body/constraints",
            "must hold at most 2048 characters of distinct REGEX patterns in all; it holds 2304",
            id="2304-characters",
        ),
    ],
)
def test_add_strategy__regex_over_a_cap__400_and_nothing_stored(
    admin_client, flag, constraints, path, message
):
    response = post(admin_client, STRATEGIES, {"name": "default", "constraints": constraints})

    error = assert_error(response, 400, "ValidationError")
    assert [detail["path"] for detail in error["details"]] == [path]
    assert error["message"].startswith(f"The `{path}` property {message}.")
    assert not FeatureStrategy.objects.exists()


def test_add_strategy__one_pattern_many_times__counted_once_200(admin_client, flag):
    constraints = [_regex("^team-[a-z]+$")] * 30

    response = post(admin_client, STRATEGIES, {"name": "default", "constraints": constraints})

    assert response.status_code == 200, response.content


def test_add_strategy__regex_over_re2s_default_program_size__200_as_unleash(admin_client, flag):
    # RE2's default budget refuses it ("pattern too large"); Unleash 8.2's RE2JS takes it.
    response = post(
        admin_client, STRATEGIES, {"name": "default", "constraints": [_regex(r"\pL{1000}")]}
    )

    assert response.status_code == 200, response.content
    assert response.json()["constraints"][0]["value"] == r"\pL{1000}"


def test_admin_add_segment__31_distinct_patterns__form_error(staff, db):
    data = {
        "name": "patterns",
        "constraints": json.dumps([_regex(f"a{n}") for n in range(31)]),
        "created_by": "",
    }

    response = staff.post("/admin/features/segment/add/", data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors == {
        "constraints": ["constraints must hold at most 30 distinct REGEX patterns; it holds 31"]
    }
    assert not Segment.objects.exists()
