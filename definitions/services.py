"""Context fields and strategy definitions, written as Unleash 8.2's context and strategy
services write them: each write and its audit event in one transaction. Where Unleash fails
(a 500 for editing a built-in strategy, a context field's sort order lost on each update), these
refuse or keep as it should have."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from definitions.models import ContextField, StrategyDefinition
from definitions.usage import context_field_usage
from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.errors import (
    InUseError,
    InvalidOperationError,
    NameExistsError,
    NotFoundError,
)
from flagadmin.core.times import api_timestamp

CONTEXT_FIELD_CREATED = "context-field-created"
CONTEXT_FIELD_UPDATED = "context-field-updated"
CONTEXT_FIELD_DELETED = "context-field-deleted"
STRATEGY_CREATED = "strategy-created"
STRATEGY_UPDATED = "strategy-updated"
STRATEGY_DEPRECATED = "strategy-deprecated"
STRATEGY_REACTIVATED = "strategy-reactivated"
STRATEGY_DELETED = "strategy-deleted"

CONTEXT_FIELD_IN_USE = (
    "This context field is in use by existing flags. To delete it, first remove its usage from "
    "all flags."
)
STRATEGY_IN_USE = (
    "This strategy type is used by strategies of flags (archived ones included). To delete it, "
    "first remove those strategies, or deprecate it instead."
)


# --- context fields -----------------------------------------------------------------------------


def context_field_as_dict(field: ContextField) -> dict[str, Any]:
    """`contextFieldSchema` as Unleash's store reads a row."""
    return {
        "name": field.name,
        "description": field.description,
        "stickiness": field.stickiness,
        "sortOrder": field.sort_order,
        "legalValues": field.legal_values or [],
        "createdAt": api_timestamp(field.created_at),
    }


def _context_field_data(name: str, fields: dict[str, Any]) -> dict[str, Any]:
    """An event's data as Unleash's validated context schema gives it: the name, what was sent
    of description and legal values, and stickiness (false unless sent)."""
    data: dict[str, Any] = {"name": name}
    for key in ("description", "legalValues"):
        if key in fields:
            data[key] = fields[key]
    data["stickiness"] = fields.get("stickiness", False)
    return data


def _context_field_name_taken() -> NameExistsError:
    return NameExistsError("A context field with that name already exist")


def context_field_not_found(name: str) -> NotFoundError:
    return NotFoundError(f"Could not find context field with name {name}")


def check_context_field_name_free(name: str) -> None:
    if ContextField.objects.filter(pk=name).exists():
        raise _context_field_name_taken()


def create_context_field(*, fields: dict[str, Any], actor: Actor) -> ContextField:
    """Create a context field (`context-field-created`); 409 for a name taken. `fields`: name,
    and optionally description, stickiness, sortOrder, legalValues (as validated)."""
    name = fields["name"]
    with transaction.atomic():
        check_context_field_name_free(name)
        try:
            with transaction.atomic():  # a savepoint: a racing creation of the name wins
                field = ContextField.objects.create(
                    name=name,
                    description=fields.get("description"),
                    stickiness=fields.get("stickiness", False),
                    sort_order=fields.get("sortOrder") or 0,
                    legal_values=fields.get("legalValues") or [],
                )
        except IntegrityError:
            raise _context_field_name_taken() from None
        record_event(CONTEXT_FIELD_CREATED, actor=actor, data=_context_field_data(name, fields))
    return field


def update_context_field(*, name: str, fields: dict[str, Any], actor: Actor) -> ContextField:
    """Replace a context field's settings as Unleash's PUT does (`context-field-updated`):
    stickiness and legal values take what was sent (false and none when left out), the
    description is kept when left out. The sort order is set when sent and otherwise kept
    (Unleash resets it to 0 on every update). 404 for an unknown field."""
    with transaction.atomic():
        field = ContextField.objects.select_for_update().filter(pk=name).first()
        if field is None:
            raise context_field_not_found(name)
        before = context_field_as_dict(field)
        # Unleash's pre-data leaves out the creation time and the sort order.
        pre_data = {k: before[k] for k in ("name", "stickiness", "description", "legalValues")}
        if "description" in fields:
            field.description = fields["description"]
        field.stickiness = fields.get("stickiness", False)
        field.legal_values = fields.get("legalValues") or []
        if fields.get("sortOrder") is not None:
            field.sort_order = fields["sortOrder"]
        field.save()
        record_event(
            CONTEXT_FIELD_UPDATED,
            actor=actor,
            data=_context_field_data(name, fields),
            pre_data=pre_data,
        )
    return field


def delete_context_field(*, name: str, actor: Actor) -> None:
    """Delete a context field (`context-field-deleted`, the field as pre-data); 404 for an
    unknown one, 409 while a strategy of a flag that is not archived has a constraint on it."""
    with transaction.atomic():
        field = ContextField.objects.select_for_update().filter(pk=name).first()
        if field is None:
            raise context_field_not_found(name)
        if context_field_usage().is_used(name):
            raise InUseError(CONTEXT_FIELD_IN_USE)
        pre_data = context_field_as_dict(field)
        field.delete()
        record_event(CONTEXT_FIELD_DELETED, actor=actor, pre_data=pre_data)


def _change_legal_values(name: str, change, actor: Actor) -> None:
    """Apply `change` to the field's legal values, recording `context-field-updated` with the
    whole field before and after, as Unleash does; a change that changes nothing records
    nothing."""
    with transaction.atomic():
        field = ContextField.objects.select_for_update().filter(pk=name).first()
        if field is None:
            raise context_field_not_found(name)
        pre_data = context_field_as_dict(field)
        field.legal_values = change(list(field.legal_values or []))
        field.save(update_fields=["legal_values"])
        record_event(
            CONTEXT_FIELD_UPDATED,
            actor=actor,
            data=context_field_as_dict(field),
            pre_data=pre_data,
        )


def set_legal_value(*, name: str, legal_value: dict[str, Any], actor: Actor) -> None:
    """Add a legal value to the field, or replace the one with the same value (its
    description), as Unleash's `updateLegalValue`. 404 for an unknown field."""

    def change(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, item in enumerate(values):
            if item.get("value") == legal_value["value"]:
                values[index] = legal_value
                return values
        return [*values, legal_value]

    _change_legal_values(name, change, actor)


def delete_legal_value(*, name: str, value: str, actor: Actor) -> None:
    """Remove a legal value from the field (one it does not list: nothing changes), as
    Unleash's `deleteLegalValue`; constraints that use it keep it. 404 for an unknown field."""
    _change_legal_values(
        name, lambda values: [item for item in values if item.get("value") != value], actor
    )


# --- strategy definitions -----------------------------------------------------------------------


def strategy_as_dict(strategy: StrategyDefinition) -> dict[str, Any]:
    """`strategySchema` as Unleash's store reads a row."""
    return {
        "displayName": strategy.display_name,
        "name": strategy.name,
        "editable": strategy.editable,
        "description": strategy.description,
        "parameters": strategy.parameters or [],
        "deprecated": strategy.deprecated,
        "title": strategy.title,
    }


def strategy_not_found() -> NotFoundError:
    return NotFoundError("No strategy found")


def _strategy_name_taken(name: str) -> NameExistsError:
    return NameExistsError(f"Strategy with name {name} already exist!")


def _sent(fields: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: fields[key] for key in keys if key in fields}


def create_strategy(*, fields: dict[str, Any], actor: Actor) -> StrategyDefinition:
    """Create a custom strategy (`strategy-created`), editable and not deprecated whatever was
    sent; 409 for a name taken. `fields`: name, parameters, and optionally title, description."""
    name = fields["name"]
    with transaction.atomic():
        if StrategyDefinition.objects.filter(pk=name).exists():
            raise _strategy_name_taken(name)
        try:
            with transaction.atomic():
                strategy = StrategyDefinition.objects.create(
                    name=name,
                    title=fields.get("title"),
                    description=fields.get("description"),
                    parameters=fields["parameters"],
                )
        except IntegrityError:
            raise _strategy_name_taken(name) from None
        data = {
            "name": name,
            **_sent(fields, "title", "description"),
            "parameters": fields["parameters"],
            "editable": True,
            "deprecated": False,
        }
        record_event(STRATEGY_CREATED, actor=actor, data=data)
    return strategy


def _editable_strategy(name: str) -> StrategyDefinition:
    strategy = StrategyDefinition.objects.select_for_update().filter(pk=name).first()
    if strategy is None:
        raise strategy_not_found()
    if strategy.built_in:
        # Unleash throws a plain Error here: a 500 `UnknownError` with this message.
        raise InvalidOperationError(f"Cannot edit strategy {name}")
    return strategy


def update_strategy(*, name: str, fields: dict[str, Any], actor: Actor) -> StrategyDefinition:
    """Change a custom strategy (`strategy-updated`, with the strategy before as pre-data): its
    parameters, and its description and title when sent. 404 for an unknown strategy, 403
    `InvalidOperationError` for a built-in one."""
    with transaction.atomic():
        strategy = _editable_strategy(name)
        pre_data = strategy_as_dict(strategy)
        strategy.parameters = fields["parameters"]
        for key, attribute in (("description", "description"), ("title", "title")):
            if key in fields:
                setattr(strategy, attribute, fields[key])
        strategy.save()
        data = {
            "name": name,
            **_sent(fields, "title", "description"),
            "parameters": fields["parameters"],
        }
        record_event(STRATEGY_UPDATED, actor=actor, data=data, pre_data=pre_data)
    return strategy


def set_strategy_deprecated(*, name: str, deprecated: bool, actor: Actor) -> None:
    """Deprecate (`strategy-deprecated`) or reactivate (`strategy-reactivated`) a strategy,
    built-in ones included, as Unleash does; the event is recorded even when nothing changes,
    as there. 404 for an unknown strategy, with Unleash's message for each."""
    with transaction.atomic():
        strategy = StrategyDefinition.objects.select_for_update().filter(pk=name).first()
        if strategy is None:
            if deprecated:
                raise NotFoundError(f"Could not find strategy with name {name}")
            raise strategy_not_found()
        if strategy.deprecated != deprecated:
            strategy.deprecated = deprecated
            strategy.save(update_fields=["deprecated"])
        kind = STRATEGY_DEPRECATED if deprecated else STRATEGY_REACTIVATED
        record_event(kind, actor=actor, data={"name": name})


def delete_strategy(*, name: str, actor: Actor) -> None:
    """Delete a custom strategy type (`strategy-deleted`). 404 for an unknown one, 403
    `InvalidOperationError` for a built-in one (Unleash: 500), 409 while strategies of flags,
    archived ones included, are of that type (Unleash deletes it and leaves them naming a type
    that no longer exists)."""
    with transaction.atomic():
        strategy = _editable_strategy(name)
        if context_field_usage().strategy_type_used(name):
            raise InUseError(STRATEGY_IN_USE)
        strategy.delete()
        record_event(STRATEGY_DELETED, actor=actor, data={"name": name})
