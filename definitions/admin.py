"""Django admin of context fields and strategy definitions. Operators inspect every one and add,
edit (and, for unused context fields, delete) custom ones; the built-in ones are read-only here
(strategies can still be deprecated and reactivated, as over the API). Every write goes
through `definitions.services`, which records the same events as the API; the forms check the
same rules as the API's serializers."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from definitions import services
from definitions.models import BUILT_IN_CONTEXT_FIELDS, ContextField, StrategyDefinition
from definitions.serializers import (
    CreateContextFieldSchemaSerializer,
    CreateStrategySchemaSerializer,
)
from definitions.usage import context_field_usage
from flagadmin.api.errors import bounded_validation_error
from flagadmin.core.admin_audit import AuditedModelAdmin
from flagadmin.core.errors import DomainError


def _check_with(serializer_class, payload: dict[str, Any]) -> dict[str, Any]:
    """The API's rules for the same payload; a refusal becomes the form's error."""
    body = serializer_class(data=payload)
    if not body.is_valid():
        error = bounded_validation_error(body.errors, payload)
        raise forms.ValidationError([detail["message"] for detail in error.details or []])
    return dict(body.validated_data)


class ContextFieldForm(forms.ModelForm):
    class Meta:
        model = ContextField
        fields = ["name", "description", "stickiness", "sort_order", "legal_values"]
        help_texts = {
            "legal_values": 'A JSON list such as [{"value": "gold", "description": "..."}]; '
            "empty: any value.",
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        name = cleaned.get("name", self.instance.name)
        payload = {
            "name": name,
            "description": cleaned.get("description") or None,
            "stickiness": bool(cleaned.get("stickiness")),
            "sortOrder": cleaned.get("sort_order") or 0,
            "legalValues": cleaned.get("legal_values") or [],
        }
        self.api_fields = _check_with(CreateContextFieldSchemaSerializer, payload)
        return cleaned


@admin.register(ContextField)
class ContextFieldAdmin(AuditedModelAdmin):
    audit_type = ""  # the services record Unleash's events
    form = ContextFieldForm
    list_display = ["name", "description", "stickiness", "sort_order", "legal_value_count"]
    search_fields = ["name", "description"]
    ordering = ["name"]
    actions = None

    @admin.display(description="legal values")
    def legal_value_count(self, field: ContextField) -> int:
        return len(field.legal_values or [])

    def get_readonly_fields(self, request: HttpRequest, obj: ContextField | None = None):
        return ["name", "created_at"] if obj is not None else ["created_at"]

    def has_change_permission(self, request: HttpRequest, obj: ContextField | None = None) -> bool:
        if obj is not None and obj.name in BUILT_IN_CONTEXT_FIELDS:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: ContextField | None = None) -> bool:
        if obj is not None and (
            obj.name in BUILT_IN_CONTEXT_FIELDS or context_field_usage().is_used(obj.name)
        ):
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: ContextField, form, change: bool) -> None:
        fields = form.api_fields
        if change:
            fields.pop("name")
            saved = services.update_context_field(name=obj.name, fields=fields, actor=request.user)
        else:
            saved = services.create_context_field(fields=fields, actor=request.user)
        obj.created_at = saved.created_at

    def delete_model(self, request: HttpRequest, obj: ContextField) -> None:
        services.delete_context_field(name=obj.name, actor=request.user)


class StrategyDefinitionForm(forms.ModelForm):
    class Meta:
        model = StrategyDefinition
        fields = ["name", "title", "description", "parameters"]
        help_texts = {
            "parameters": 'A JSON list such as [{"name": "tenants", "type": "list", '
            '"description": "", "required": false}]; types: string, percentage, list, number, '
            "boolean.",
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        payload = {
            "name": cleaned.get("name", self.instance.name),
            "title": cleaned.get("title") or None,
            "description": cleaned.get("description") or None,
            "parameters": cleaned.get("parameters") or [],
        }
        self.api_fields = _check_with(CreateStrategySchemaSerializer, payload)
        return cleaned


@admin.register(StrategyDefinition)
class StrategyDefinitionAdmin(AuditedModelAdmin):
    audit_type = ""  # the services record Unleash's events
    form = StrategyDefinitionForm
    list_display = ["name", "display_name", "title", "editable", "deprecated", "sort_order"]
    list_filter = ["built_in", "deprecated"]
    search_fields = ["name", "title", "description"]
    actions = ["deprecate", "reactivate"]

    @admin.display(boolean=True)
    def editable(self, strategy: StrategyDefinition) -> bool:
        return strategy.editable

    def get_readonly_fields(self, request: HttpRequest, obj: StrategyDefinition | None = None):
        fixed = ["display_name", "built_in", "deprecated", "sort_order", "created_at"]
        return ["name", *fixed] if obj is not None else fixed

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # strategy definitions are not deleted here
        return actions

    def has_change_permission(
        self, request: HttpRequest, obj: StrategyDefinition | None = None
    ) -> bool:
        if obj is not None and obj.built_in:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(
        self, request: HttpRequest, obj: StrategyDefinition | None = None
    ) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: StrategyDefinition, form, change: bool) -> None:
        fields = form.api_fields
        if change:
            fields.pop("name")
            saved = services.update_strategy(name=obj.name, fields=fields, actor=request.user)
        else:
            saved = services.create_strategy(fields=fields, actor=request.user)
        obj.created_at = saved.created_at

    def _set_deprecated(
        self, request: HttpRequest, queryset: QuerySet[StrategyDefinition], deprecated: bool
    ) -> None:
        names = list(queryset.values_list("name", flat=True))
        try:
            for name in names:
                services.set_strategy_deprecated(
                    name=name, deprecated=deprecated, actor=request.user
                )
        except DomainError as refused:
            self.message_user(request, refused.message, messages.ERROR)
            return
        verb = "Deprecated" if deprecated else "Reactivated"
        self.message_user(request, f"{verb} {len(names)} strategy type(s).", messages.SUCCESS)

    @admin.action(description="Deprecate the selected strategy types")
    def deprecate(self, request: HttpRequest, queryset: QuerySet[StrategyDefinition]) -> None:
        self._set_deprecated(request, queryset, True)

    @admin.action(description="Reactivate the selected strategy types")
    def reactivate(self, request: HttpRequest, queryset: QuerySet[StrategyDefinition]) -> None:
        self._set_deprecated(request, queryset, False)
