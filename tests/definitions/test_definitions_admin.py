"""The Django admin of context fields and strategy definitions: custom ones added and edited
through the same services as the API (same rules, same events, the operator as actor),
built-in ones read-only."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from definitions.models import ContextField, StrategyDefinition
from flagadmin.core.models import AuditEvent, Role
from tests.admin_forms import change_form_data
from tests.factories import ContextFieldFactory, StrategyDefinitionFactory, UserFactory


@pytest.fixture
def operator(db):
    return UserFactory(username="operator", root_role_id=Role.ADMIN)


@pytest.fixture
def staff(operator) -> Client:
    client = Client()
    client.force_login(operator)
    return client


def _events(*kinds: str) -> list[tuple]:
    return list(
        AuditEvent.objects.filter(type__in=kinds)
        .order_by("id")
        .values_list("type", "created_by_user_id", "data", "pre_data")
    )


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("admin:definitions_contextfield_changelist", id="context-fields"),
        pytest.param("admin:definitions_strategydefinition_changelist", id="strategies"),
    ],
)
def test_changelist__lists_built_ins(staff, url):
    response = staff.get(reverse(url))

    assert response.status_code == 200
    assert b"userId" in response.content or b"flexibleRollout" in response.content


# --- context fields -----------------------------------------------------------------------------


def test_add_context_field__through_the_service_with_the_operator_as_actor(staff, operator):
    response = staff.post(
        reverse("admin:definitions_contextfield_add"),
        {
            "name": "tier",
            "description": "Tier",
            "sort_order": "3",
            "legal_values": json.dumps([{"value": "gold"}]),
            "stickiness": "on",
        },
    )

    assert response.status_code == 302
    field = ContextField.objects.get(pk="tier")
    assert (field.description, field.sort_order, field.legal_values, field.stickiness) == (
        "Tier",
        3,
        [{"value": "gold"}],
        True,
    )
    assert _events("context-field-created") == [
        (
            "context-field-created",
            operator.pk,
            {
                "name": "tier",
                "description": "Tier",
                "legalValues": [{"value": "gold"}],
                "stickiness": True,
            },
            None,
        )
    ]


def test_add_context_field__legal_value_twice__form_error_nothing_saved(staff):
    response = staff.post(
        reverse("admin:definitions_contextfield_add"),
        {
            "name": "tier",
            "sort_order": "0",
            "legal_values": json.dumps([{"value": "gold"}, {"value": "gold"}]),
        },
    )

    assert response.status_code == 200
    assert "must not repeat a legal value" in str(response.context["adminform"].form.errors)
    assert not ContextField.objects.filter(pk="tier").exists()
    assert _events("context-field-created") == []


def test_change_custom_context_field__updated_event(staff, operator):
    ContextFieldFactory(name="tier", description="old")
    url = reverse("admin:definitions_contextfield_change", args=["tier"])

    response = staff.post(url, change_form_data(staff.get(url), description="new"))

    assert response.status_code == 302
    assert ContextField.objects.get(pk="tier").description == "new"
    [(_kind, user_id, data, pre_data)] = _events("context-field-updated")
    assert (user_id, data["description"], pre_data["description"]) == (operator.pk, "new", "old")


def test_change_built_in_context_field__read_only(staff):
    url = reverse("admin:definitions_contextfield_change", args=["userId"])

    response = staff.post(url, {"description": "changed", "sort_order": "0"})

    assert response.status_code == 403
    assert ContextField.objects.get(pk="userId").description == "Allows you to constrain on userId"


def test_delete_custom_context_field__deleted_event(staff):
    ContextFieldFactory(name="tier")

    response = staff.post(
        reverse("admin:definitions_contextfield_delete", args=["tier"]), {"post": "yes"}
    )

    assert response.status_code == 302
    assert not ContextField.objects.filter(pk="tier").exists()
    assert [row[0] for row in _events("context-field-deleted")] == ["context-field-deleted"]


def test_delete_built_in_context_field__refused(staff):
    response = staff.post(
        reverse("admin:definitions_contextfield_delete", args=["userId"]), {"post": "yes"}
    )

    assert response.status_code == 403
    assert ContextField.objects.filter(pk="userId").exists()


# --- strategy definitions -----------------------------------------------------------------------


def test_add_strategy__through_the_service(staff, operator):
    parameters = [{"name": "tenants", "type": "list"}]

    response = staff.post(
        reverse("admin:definitions_strategydefinition_add"),
        {"name": "gate", "title": "", "description": "Gate", "parameters": json.dumps(parameters)},
    )

    assert response.status_code == 302
    gate = StrategyDefinition.objects.get(pk="gate")
    assert (gate.built_in, gate.parameters, gate.description) == (False, parameters, "Gate")
    assert _events("strategy-created") == [
        (
            "strategy-created",
            operator.pk,
            {
                "name": "gate",
                "title": None,
                "description": "Gate",
                "parameters": parameters,
                "editable": True,
                "deprecated": False,
            },
            None,
        )
    ]


def test_add_strategy__unknown_parameter_type__form_error(staff):
    response = staff.post(
        reverse("admin:definitions_strategydefinition_add"),
        {"name": "gate", "parameters": json.dumps([{"name": "p", "type": "nope"}])},
    )

    assert response.status_code == 200
    assert "must be equal to one of the allowed values" in str(
        response.context["adminform"].form.errors
    )
    assert not StrategyDefinition.objects.filter(pk="gate").exists()


def test_change_custom_strategy__updated_event(staff):
    StrategyDefinitionFactory(name="gate", description="old")
    url = reverse("admin:definitions_strategydefinition_change", args=["gate"])

    response = staff.post(url, change_form_data(staff.get(url), description="new"))

    assert response.status_code == 302
    assert StrategyDefinition.objects.get(pk="gate").description == "new"
    assert [row[0] for row in _events("strategy-updated")] == ["strategy-updated"]


def test_change_built_in_strategy__read_only(staff):
    url = reverse("admin:definitions_strategydefinition_change", args=["default"])

    page = staff.get(url)
    response = staff.post(url, {"description": "changed", "parameters": "[]"})

    assert page.status_code == 200
    assert response.status_code == 403
    assert StrategyDefinition.objects.get(pk="default").parameters == []


def test_deprecate_action__built_in_too__events(staff):
    response = staff.post(
        reverse("admin:definitions_strategydefinition_changelist"),
        {"action": "deprecate", "_selected_action": ["default"]},
    )

    assert response.status_code == 302
    assert StrategyDefinition.objects.get(pk="default").deprecated is True
    assert [row[2] for row in _events("strategy-deprecated")] == [{"name": "default"}]
