"""Bodies of the flag-list, environment and strategy endpoints, named as Unleash's OpenAPI
document names them (`createFeatureStrategySchema`, `projectFeaturesSchema`, ...)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from features.regexes import regex_count_problem
from features.serializers import TagSchemaSerializer
from features.validators import (
    CONSTRAINT_OPERATORS,
    MAX_WEIGHT,
    PAYLOAD_TYPES,
    SORT_ORDER_MAX,
    SORT_ORDER_MIN,
    WEIGHT_TYPES,
    constraint_problem,
    validate_strategy_variants,
    variant_weights_problem,
)
from flagadmin.api.fields import (
    NumberAsStringField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictDictField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
)

# Unleash 8.2's built-in strategies (its strategy list, measured). `userWithId` is no longer
# among them (Unleash answers 400 "Could not find strategy type with name userWithId"); SDKs
# still evaluate one stored earlier. A strategy's name is checked against the stored
# definitions, custom ones included, by the service (`strategy_services.check_definitions`).
STRATEGY_NAMES = (
    "default",
    "flexibleRollout",
    "remoteAddress",
    "applicationHostname",
)


@extend_schema_serializer(component_name="createConstraintSchema")
class CreateConstraintSchemaSerializer(StrictSerializer):
    """A condition on the context: all of a strategy's constraints must hold."""

    contextName = StrictCharField(help_text="Context field, e.g. `userId`, `appName`.")
    operator = StrictChoiceField(choices=CONSTRAINT_OPERATORS)
    caseInsensitive = StrictBooleanField(default=False)
    inverted = StrictBooleanField(default=False)
    # A number is taken as its string, as Unleash's validator coerces it.
    values = StrictListField(
        child=NumberAsStringField(allow_blank=True),
        required=False,
        help_text="For list operators.",
    )
    value = NumberAsStringField(
        allow_blank=True, required=False, help_text="For single-value operators."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if problem := constraint_problem(attrs):
            key, text = problem
            # `values/1` is the error tree {"values": {1: [...]}}, as DRF's own.
            field, _, index = key.partition("/")
            raise serializers.ValidationError({field: {int(index): [text]} if index else [text]})
        return attrs


@extend_schema_serializer(component_name="createStrategyVariantPayloadSchema")
class CreatePayloadSchemaSerializer(StrictSerializer):
    type = StrictChoiceField(choices=PAYLOAD_TYPES)
    value = StrictCharField(allow_blank=True)


@extend_schema_serializer(component_name="createStrategyVariantSchema")
class CreateStrategyVariantSchemaSerializer(StrictSerializer):
    name = StrictCharField()
    weight = StrictIntegerField(min_value=0, max_value=MAX_WEIGHT)
    weightType = StrictChoiceField(choices=WEIGHT_TYPES)
    stickiness = StrictCharField()
    payload = CreatePayloadSchemaSerializer(required=False)


@extend_schema_serializer(component_name="createFeatureStrategySchema")
class CreateFeatureStrategySchemaSerializer(StrictSerializer):
    """A strategy: when it is on. A flag environment is on for a context when the flag is
    enabled there and at least one of its strategies (not `disabled`) is on."""

    name = StrictCharField(
        help_text="The strategy type: a built-in one (" + ", ".join(STRATEGY_NAMES) + ") or a "
        "custom one (`GET /api/admin/strategies` lists them)."
    )
    title = StrictCharField(allow_null=True, allow_blank=True, default=None, max_length=255)
    disabled = StrictBooleanField(allow_null=True, default=False)
    sortOrder = StrictIntegerField(
        required=False,
        min_value=SORT_ORDER_MIN,
        max_value=SORT_ORDER_MAX,
        help_text="Position among the environment's strategies (default: last).",
    )
    constraints = StrictListField(child=CreateConstraintSchemaSerializer(), default=list)
    variants = StrictListField(child=CreateStrategyVariantSchemaSerializer(), default=list)
    parameters = StrictDictField(
        child=NumberAsStringField(allow_blank=True),
        default=dict,
        help_text="Strings by name: `flexibleRollout` takes `rollout` (0-100), `stickiness`, "
        "`groupId` (missing ones are filled in as Unleash does); "
        "`remoteAddress` `IPs`, `applicationHostname` `hostNames` (comma-separated).",
    )
    segments = StrictListField(child=StrictIntegerField(), default=list)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        # Counted before any REGEX pattern is parsed, so no body costs more than that many
        # (`features.regexes`).
        if isinstance(data, dict) and (problem := regex_count_problem(data.get("constraints"))):
            raise serializers.ValidationError({"constraints": [problem]})
        return super().to_internal_value(data)

    def validate_parameters(self, value: dict[str, str]) -> dict[str, str]:
        if self.initial_data.get("name") == "flexibleRollout" and "rollout" in value:
            rollout = value["rollout"]
            if not (rollout.isdigit() and 0 <= int(rollout) <= 100):
                raise serializers.ValidationError({"rollout": ["must be an integer from 0 to 100"]})
        return value

    def validate_variants(self, value: list[dict]) -> list[dict]:
        try:
            validate_strategy_variants(value, weights=False)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.messages) from None
        # Unleash's refusals before it fixes the weights (the service fixes them).
        if problem := variant_weights_problem(value):
            raise serializers.ValidationError([problem])
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments of `add_feature_strategy` / `update_feature_strategy`."""
        return {
            "name": attrs["name"],
            "title": attrs["title"] or None,
            "disabled": bool(attrs["disabled"]),
            "sort_order": attrs.get("sortOrder"),
            "constraints": [dict(c) for c in attrs["constraints"]],
            "variants": [dict(v) for v in attrs["variants"]],
            "parameters": dict(attrs["parameters"]),
            "segments": attrs["segments"],
        }


@extend_schema_serializer(component_name="setStrategySortOrderSchema")
class StrategySortOrderSchemaSerializer(StrictSerializer):
    """A strategy with its new sort order (the body is a list of them)."""

    id = StrictCharField(help_text="The strategy's id.")
    sortOrder = StrictIntegerField(min_value=SORT_ORDER_MIN, max_value=SORT_ORDER_MAX)


@extend_schema_serializer(component_name="createDependentFeatureSchema")
class CreateDependentFeatureSchemaSerializer(StrictSerializer):
    """A parent the flag depends on."""

    feature = StrictCharField(help_text="The parent flag's name.")
    enabled = StrictBooleanField(
        default=True, help_text="Whether the parent must be enabled (`false`: disabled)."
    )
    variants = StrictListField(
        child=StrictCharField(),
        required=False,
        help_text="Variants the parent must resolve to (with `enabled` only); empty: any.",
    )


@extend_schema_serializer(component_name="batchFeaturesSchema")
class BatchFeaturesSchemaSerializer(StrictSerializer):
    features = StrictListField(child=StrictCharField(), help_text="Flag names.")


@extend_schema_serializer(component_name="bulkToggleFeaturesSchema")
class BulkToggleFeaturesSchemaSerializer(StrictSerializer):
    features = StrictListField(child=StrictCharField(), help_text="Flag names.")


# --- the project's flags -----------------------------------------------------------------------


@extend_schema_serializer(component_name="projectFeatureEnvironmentSchema")
class ProjectFeatureEnvironmentSchemaSerializer(serializers.Serializer):
    name = serializers.CharField(source="environment_id")
    type = serializers.CharField(source="environment.type")
    enabled = serializers.BooleanField()
    sortOrder = serializers.IntegerField(source="environment.sort_order")
    variantCount = serializers.SerializerMethodField()
    lastSeenAt = serializers.DateTimeField(source="last_seen_at", allow_null=True)
    hasStrategies = serializers.SerializerMethodField()
    hasEnabledStrategies = serializers.SerializerMethodField()
    strategyCount = serializers.IntegerField(
        source="strategy_count", help_text="How many strategies (flagadmin's addition)."
    )

    def get_variantCount(self, env) -> int:
        return len(env.variants)

    def get_hasStrategies(self, env) -> bool:
        return env.strategy_count > 0

    def get_hasEnabledStrategies(self, env) -> bool:
        return env.enabled_strategy_count > 0


@extend_schema_serializer(component_name="projectFeatureSchema")
class ProjectFeatureSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    stale = serializers.BooleanField()
    favorite = serializers.BooleanField(source="is_favorite")
    impressionData = serializers.BooleanField(source="impression_data")
    createdAt = serializers.DateTimeField(source="created_at")
    lastSeenAt = serializers.DateTimeField(source="last_seen_at", allow_null=True)
    tags = TagSchemaSerializer(many=True, source="tag_list")
    environments = ProjectFeatureEnvironmentSchemaSerializer(many=True, source="environment_list")


@extend_schema_serializer(component_name="projectFeaturesSchema", many=False)
class ProjectFeaturesSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    features = ProjectFeatureSchemaSerializer(many=True)
