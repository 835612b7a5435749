"""Bodies of the context field and strategy endpoints, named as Unleash's OpenAPI document names
them (`createContextFieldSchema`, `contextFieldSchema`, `createStrategySchema`, ...). Request
serializers enforce Unleash's rules (its request validator's and its Joi schemas'); response
shapes (`flagadmin.api.responses`) write the bodies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from definitions.models import NAME_MAX_LENGTH, ContextField
from definitions.usage import context_field_usage
from flagadmin.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
    UrlFriendlyNameField,
)
from flagadmin.api.responses import Attrs, ResponseShape, StoredList

DESCRIPTION_MAX_LENGTH = 250
LEGAL_VALUE_MAX_LENGTH = 100
PARAMETER_TYPES = ("string", "percentage", "list", "number", "boolean")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _name_field(help_text: str) -> UrlFriendlyNameField:
    return UrlFriendlyNameField(max_length=NAME_MAX_LENGTH, help_text=help_text)


@extend_schema_serializer(component_name="legalValueSchema")
class LegalValueSchemaSerializer(StrictSerializer):
    """A value a context field may take, with what it means."""

    value = StrictCharField(
        max_length=LEGAL_VALUE_MAX_LENGTH, help_text="The valid value: 1 to 100 characters."
    )
    description = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="Describes this specific legal value.",
    )


class UpdateContextFieldFields(StrictSerializer):
    description = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=DESCRIPTION_MAX_LENGTH,
        help_text="A description of the context field (at most 250 characters).",
    )
    stickiness = StrictBooleanField(
        required=False,
        help_text="`true` if custom stickiness may use this field (default `false`).",
    )
    sortOrder = StrictIntegerField(
        required=False,
        min_value=INT32_MIN,
        max_value=INT32_MAX,
        help_text="How this field sorts when no other order is chosen.",
    )
    legalValues = StrictListField(
        child=LegalValueSchemaSerializer(),
        required=False,
        help_text="The values the field may take, each once (none: any value).",
    )
    project = StrictCharField(
        required=False,
        allow_null=True,
        help_text="Project-specific context fields are not supported: only null is taken.",
    )

    def validate_legalValues(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: set[str] = set()
        for index, item in enumerate(value):
            if item["value"] in seen:
                raise serializers.ValidationError(
                    {index: [f'must not repeat a legal value ("{item["value"]}" is given twice)']}
                )
            seen.add(item["value"])
        return value

    def validate_project(self, value: str | None) -> None:
        if value is not None:
            raise serializers.ValidationError(
                "names a project: project-specific context fields are not supported here "
                "(leave it out for a context field of every project)"
            )
        return None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.pop("project", None)
        return attrs


@extend_schema_serializer(component_name="updateContextFieldSchema")
class UpdateContextFieldSchemaSerializer(UpdateContextFieldFields):
    """A context field's new settings: stickiness and legal values left out become `false` and
    none, a description left out is kept, a sort order left out is kept."""


@extend_schema_serializer(component_name="createContextFieldSchema")
class CreateContextFieldSchemaSerializer(UpdateContextFieldFields):
    """A context field to create."""

    name = _name_field("The name of the context field: 1 to 100 URL-friendly characters.")


@extend_schema_serializer(component_name="nameSchema")
class NameSchemaSerializer(StrictSerializer):
    """A name to check."""

    name = _name_field("The name: 1 to 100 URL-friendly characters.")


class LegalValueResponseSerializer(serializers.Serializer):
    value = serializers.CharField(help_text="The valid value.")
    description = serializers.CharField(
        required=False, allow_null=True, help_text="What the value means."
    )

    class Meta:
        ref_name = None
        list_serializer_class = StoredList


@extend_schema_serializer(component_name="contextFieldSchema")
class ContextFieldSchemaSerializer(ResponseShape):
    """A context field."""

    name = serializers.CharField(help_text="The name of the context field.")
    description = serializers.CharField(allow_null=True, help_text="Its description.")
    stickiness = serializers.BooleanField(help_text="Whether custom stickiness may use it.")
    sortOrder = serializers.IntegerField(
        source="sort_order", help_text="Its place when sorted by this order."
    )
    legalValues = LegalValueResponseSerializer(
        many=True, source="legal_values", help_text="The values it may take."
    )
    createdAt = serializers.DateTimeField(
        source="created_at", allow_null=True, help_text="When it was created."
    )


@extend_schema_serializer(component_name="contextFieldWithUsageSchema")
class ContextFieldWithUsageSerializer(ContextFieldSchemaSerializer):
    """A context field with how much flags use it."""

    usedInProjects = serializers.IntegerField(
        min_value=0, help_text="How many projects have a flag with a constraint on it."
    )
    usedInFeatures = serializers.IntegerField(
        min_value=0, help_text="How many flags (not archived) have a constraint on it."
    )

    def get_attrs(self, items: Sequence[ContextField]) -> Mapping[ContextField, Attrs]:
        # Every flag's constraints read once, whatever the number of fields.
        counts = context_field_usage().counts()
        attrs = {}
        for field in items:
            projects, features = counts.get(field.name, (0, 0))
            attrs[field] = {"usedInProjects": projects, "usedInFeatures": features}
        return attrs


class ContextFieldStrategySerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The strategy's id.")
    projectId = serializers.CharField(help_text="The project of its flag.")
    featureName = serializers.CharField(help_text="Its flag.")
    strategyName = serializers.CharField(help_text="Its type.")
    environment = serializers.CharField(help_text="Its environment.")

    class Meta:
        ref_name = None


@extend_schema_serializer(component_name="contextFieldStrategiesSchema")
class ContextFieldStrategiesSchemaSerializer(serializers.Serializer):
    """The strategies of flags (not archived) with a constraint on a context field."""

    strategies = ContextFieldStrategySerializer(many=True)


# --- strategy definitions -----------------------------------------------------------------------


class StrategyParameterSerializer(StrictSerializer):
    name = StrictCharField(help_text="The name of the parameter.")
    type = StrictChoiceField(choices=PARAMETER_TYPES, help_text="The type of the parameter.")
    description = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="What the parameter does.",
    )
    required = StrictBooleanField(
        required=False, help_text="Whether a strategy of this type must set it."
    )

    class Meta:
        ref_name = "strategyParameterSchema"


class StrategyFields(StrictSerializer):
    title = StrictCharField(
        required=False, allow_null=True, allow_blank=True, help_text="A title for the strategy."
    )
    description = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="A description of the strategy type.",
    )
    parameters = StrictListField(
        child=StrategyParameterSerializer(),
        help_text="The parameters a strategy of this type sets, each name once.",
    )

    def validate_parameters(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Unleash takes two parameters of one name; a strategy could then set only one of them.
        seen: set[str] = set()
        for index, parameter in enumerate(value):
            if parameter["name"] in seen:
                raise serializers.ValidationError(
                    {index: {"name": [f'must not repeat a parameter name ("{parameter["name"]}")']}}
                )
            seen.add(parameter["name"])
        return value


@extend_schema_serializer(component_name="createStrategySchema")
class CreateStrategySchemaSerializer(StrategyFields):
    """A custom strategy type to create. `editable` and `deprecated` may be sent and are
    ignored: a new strategy is editable and not deprecated."""

    name = _name_field("The name of the strategy type: 1 to 100 URL-friendly characters.")
    editable = StrictBooleanField(required=False, help_text="Ignored.")
    deprecated = StrictBooleanField(required=False, help_text="Ignored.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.pop("editable", None)
        attrs.pop("deprecated", None)
        return attrs


@extend_schema_serializer(component_name="updateStrategySchema")
class UpdateStrategySchemaSerializer(StrategyFields):
    """A custom strategy type's new parameters, and description and title when sent."""


class StrategyParameterResponseSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    description = serializers.CharField(required=False, allow_null=True)
    required = serializers.BooleanField(required=False)

    class Meta:
        ref_name = None
        list_serializer_class = StoredList


@extend_schema_serializer(component_name="strategySchema")
class StrategySchemaSerializer(ResponseShape):
    """A strategy type."""

    displayName = serializers.CharField(
        source="display_name", allow_null=True, help_text="A human-friendly name."
    )
    name = serializers.CharField(help_text="The name (type) of the strategy.")
    editable = serializers.BooleanField(help_text="False for the strategies bundled with Unleash.")
    description = serializers.CharField(allow_null=True, help_text="What the strategy does.")
    parameters = StrategyParameterResponseSerializer(many=True, help_text="Its parameters.")
    deprecated = serializers.BooleanField(help_text="Whether it is deprecated.")
    title = serializers.CharField(allow_null=True, help_text="An optional title.")


@extend_schema_serializer(component_name="strategiesSchema", many=False)
class StrategiesSchemaSerializer(serializers.Serializer):
    """Every strategy type, by sort order then name."""

    version = serializers.IntegerField(help_text="The version of the schema (1).")
    strategies = StrategySchemaSerializer(many=True)
