"""The playground's bodies, named as Unleash 8.2's OpenAPI document names them (the context's
component is `playgroundContextSchema`: `sdkContextSchema` is the Frontend API's, whose context
is read otherwise). Answers are built as plain data by `evaluation.playground`; the response
serializers describe them for the OpenAPI document."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import (
    PolymorphicProxySerializer,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers

from features.serializers import VariantSchemaSerializer
from flagadmin.api.fields import (
    StrictCharField,
    StrictDateTimeField,
    StrictDictField,
    StrictListField,
    StrictSerializer,
    js_number_string,
)

ALL_PROJECTS = "*"
ENVIRONMENT_NAME = re.compile(r"^[a-zA-Z0-9~_.-]+$")
# The end of an RFC 3339 date-time: `Z` or an offset (`format: date-time` requires one).
RFC_3339_OFFSET = re.compile(r"(?:[zZ]|[+-]\d\d:\d\d)$")


# --- requests ---------------------------------------------------------------------------------


class ContextValueField(StrictCharField):
    """A context value: a string, or a number, boolean or null taken as Unleash's validator
    coerces it into a string field (`30` is "30", `true` "true", `null` "")."""

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is None:
            return False, ""
        return super().validate_empty_values(data)

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, bool):
            data = "true" if data else "false"
        elif isinstance(data, int | float):
            data = js_number_string(data)
        return super().to_internal_value(data)


class CurrentTimeField(StrictDateTimeField):
    """An RFC 3339 date-time with its offset, kept as sent: the engine reads it as SDKs send
    it."""

    def to_internal_value(self, data: Any) -> str:
        super().to_internal_value(data)
        if not RFC_3339_OFFSET.search(data.strip()):
            self.fail("invalid")
        return data


@extend_schema_field(
    {
        "oneOf": [
            {
                "type": "array",
                "items": {"type": "string"},
                "description": "A list of projects to check for flags in.",
            },
            {"type": "string", "enum": [ALL_PROJECTS], "description": "Every project."},
        ],
        "description": "The projects whose flags are evaluated (default: every project).",
    }
)
class ProjectsField(serializers.Field):
    """A list of project ids, or `*` for every project."""

    default_error_messages = {
        "invalid": 'must be array, or equal to one of the allowed values: "*"',
    }

    def __init__(self, **kwargs):
        self.items = StrictListField(child=StrictCharField(allow_blank=True))
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[str] | str:
        if data == ALL_PROJECTS:
            return data
        if not isinstance(data, list):
            self.fail("invalid")
        return self.items.run_validation(data)

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_serializer(component_name="playgroundContextSchema")
class PlaygroundContextSchemaSerializer(StrictSerializer):
    """The Unleash context as modeled in client SDKs. Other fields are context fields too (a
    constraint on `tenant` reads `tenant`). Numbers, booleans and null are taken as strings,
    as Unleash's validator coerces them."""

    appName = ContextValueField(min_length=1, help_text="The name of the application.")
    currentTime = CurrentTimeField(
        required=False,
        help_text="An RFC 3339 date-time (default: the time of the request).",
    )
    environment = ContextValueField(
        required=False,
        allow_blank=True,
        help_text="The environment the app runs in, as a context field (default: `default`).",
    )
    properties = StrictDictField(
        child=ContextValueField(allow_blank=True),
        required=False,
        help_text="Other context fields.",
    )
    remoteAddress = ContextValueField(required=False, allow_blank=True)
    sessionId = ContextValueField(required=False, allow_blank=True)
    userId = ContextValueField(required=False, allow_blank=True)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        declared = super().to_internal_value(data)
        # Every field as sent, in its order; the declared ones checked.
        return {key: declared[key] if key in self.fields else data[key] for key in data}


@extend_schema_serializer(component_name="playgroundRequestSchema")
class PlaygroundRequestSchemaSerializer(StrictSerializer):
    """Data for the playground API to evaluate feature flags."""

    environment = StrictCharField(
        allow_blank=True, help_text="The environment to evaluate feature flags in."
    )
    projects = ProjectsField(required=False)
    context = PlaygroundContextSchemaSerializer()


class EnvironmentNameField(StrictCharField):
    default_error_messages = {"pattern": 'must match pattern "^[a-zA-Z0-9~_.-]+$"'}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not ENVIRONMENT_NAME.match(value):
            self.fail("pattern")
        return value


@extend_schema_serializer(component_name="advancedPlaygroundRequestSchema")
class AdvancedPlaygroundRequestSchemaSerializer(StrictSerializer):
    """Data for the playground API to evaluate flags in advanced mode: several environments,
    and context values separated by commas, each combination evaluated."""

    environments = StrictListField(
        child=EnvironmentNameField(),
        min_length=1,
        help_text="The environments to evaluate flags in.",
    )
    projects = ProjectsField(required=False)
    context = PlaygroundContextSchemaSerializer()


def projects_of(validated: dict[str, Any]) -> list[str] | None:
    """The projects asked for; None: every project."""
    projects = validated.get("projects", ALL_PROJECTS)
    return None if projects == ALL_PROJECTS else projects


# --- responses (for the OpenAPI document) ---------------------------------------------------------


@extend_schema_serializer(component_name="playgroundConstraintSchema")
class PlaygroundConstraintSchemaSerializer(serializers.Serializer):
    contextName = serializers.CharField(help_text="The context field the constraint applies to.")
    operator = serializers.CharField(help_text="The operator, e.g. `IN`, `NUM_GT`.")
    caseInsensitive = serializers.BooleanField(required=False)
    inverted = serializers.BooleanField(required=False)
    values = serializers.ListField(child=serializers.CharField(), required=False)
    value = serializers.CharField(required=False)
    result = serializers.BooleanField(help_text="Whether the constraint holds for the context.")


@extend_schema_serializer(component_name="playgroundSegmentSchema")
class PlaygroundSegmentSchemaSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The segment's id.")
    name = serializers.CharField(help_text="The segment's name.")
    result = serializers.BooleanField(help_text="Whether every one of its constraints holds.")
    constraints = PlaygroundConstraintSchemaSerializer(many=True)


class _PayloadSerializer(serializers.Serializer):
    type = serializers.CharField(help_text="The format of the payload.")
    value = serializers.CharField(help_text="The payload value stringified.")


class _StrategyVariantSerializer(serializers.Serializer):
    name = serializers.CharField()
    enabled = serializers.BooleanField()
    payload = _PayloadSerializer(required=False)


@extend_schema_field(
    {"anyOf": [{"type": "boolean", "enum": [False]}, {"type": "string", "enum": ["unknown"]}]}
)
class _FalseOrUnknownField(serializers.Field):
    pass


@extend_schema_field({"anyOf": [{"type": "boolean"}, {"type": "string", "enum": ["unknown"]}]})
class BooleanOrUnknownField(serializers.Field):
    pass


class _CompleteResultSerializer(serializers.Serializer):
    evaluationStatus = serializers.ChoiceField(choices=["complete"])
    enabled = serializers.BooleanField(help_text="Whether the strategy is on for the context.")
    variant = _StrategyVariantSerializer(
        required=False, help_text="The strategy variant the context gets (whether or not it is on)."
    )
    variants = VariantSchemaSerializer(many=True, required=False)


class _IncompleteResultSerializer(serializers.Serializer):
    evaluationStatus = serializers.ChoiceField(
        choices=["incomplete", "unevaluated"],
        help_text="`incomplete`: a custom strategy, which cannot be decided here; "
        "`unevaluated`: a paused strategy.",
    )
    enabled = _FalseOrUnknownField(
        help_text="`false` when a constraint or segment fails, else `unknown`."
    )


STRATEGY_RESULT = PolymorphicProxySerializer(
    component_name="playgroundStrategyResultSchema",
    serializers=[_CompleteResultSerializer, _IncompleteResultSerializer],
    resource_type_field_name=None,
)


class _LinksSerializer(serializers.Serializer):
    edit = serializers.CharField(help_text="Where Unleash's UI edits the strategy.")


@extend_schema_serializer(component_name="playgroundStrategySchema")
class PlaygroundStrategySchemaSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The strategy's name.")
    title = serializers.CharField(required=False, help_text="Its title, when it has one.")
    id = serializers.CharField(help_text="The strategy's id.")
    result = STRATEGY_RESULT
    disabled = serializers.BooleanField(allow_null=True, help_text="Paused: not evaluated.")
    segments = PlaygroundSegmentSchemaSerializer(many=True)
    constraints = PlaygroundConstraintSchemaSerializer(many=True)
    parameters = serializers.DictField(child=serializers.CharField())
    links = _LinksSerializer()


class _StrategiesSerializer(serializers.Serializer):
    result = BooleanOrUnknownField(
        help_text="Whether a strategy is on for the context: `unknown` when none is and one "
        "could not be decided. With no strategy, whether the flag is enabled."
    )
    data = PlaygroundStrategySchemaSerializer(many=True)


class _FeatureVariantSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The variant's name; `disabled` when there is none.")
    enabled = serializers.BooleanField()
    payload = _PayloadSerializer(required=False)
    feature_enabled = serializers.BooleanField(required=False)
    featureEnabled = serializers.BooleanField(required=False)


@extend_schema_serializer(component_name="playgroundFeatureSchema")
class PlaygroundFeatureSchemaSerializer(serializers.Serializer):
    isEnabled = serializers.BooleanField(help_text="The engine's decision for the context.")
    isEnabledInCurrentEnvironment = serializers.BooleanField(
        help_text="Whether the flag is enabled in the environment."
    )
    hasUnsatisfiedDependency = serializers.BooleanField(
        help_text="Whether a parent it depends on is not as required."
    )
    variant = _FeatureVariantSerializer(allow_null=True)
    variants = VariantSchemaSerializer(many=True)
    name = serializers.CharField()
    projectId = serializers.CharField()
    strategies = _StrategiesSerializer()


@extend_schema_serializer(component_name="playgroundResponseSchema")
class PlaygroundResponseSchemaSerializer(serializers.Serializer):
    input = PlaygroundRequestSchemaSerializer()
    features = PlaygroundFeatureSchemaSerializer(many=True)


@extend_schema_serializer(component_name="playgroundFlatContextSchema")
class PlaygroundFlatContextSchemaSerializer(serializers.Serializer):
    """One combination of the context's values, properties at the top level."""

    appName = serializers.CharField()


@extend_schema_serializer(component_name="advancedPlaygroundEnvironmentFeatureSchema")
class AdvancedPlaygroundEnvironmentFeatureSchemaSerializer(PlaygroundFeatureSchemaSerializer):
    context = PlaygroundFlatContextSchemaSerializer()
    environment = serializers.CharField()


@extend_schema_serializer(component_name="advancedPlaygroundFeatureSchema")
class AdvancedPlaygroundFeatureSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    projectId = serializers.CharField()
    environments = serializers.DictField(
        child=serializers.ListField(child=AdvancedPlaygroundEnvironmentFeatureSchemaSerializer()),
        help_text="Per environment, the flag's answer for each combination of the context.",
    )


class _WarningsSerializer(serializers.Serializer):
    invalidContextProperties = serializers.ListField(
        child=serializers.CharField(),
        help_text="Top-level context fields left out: neither strings nor `properties`.",
    )


@extend_schema_serializer(component_name="advancedPlaygroundResponseSchema")
class AdvancedPlaygroundResponseSchemaSerializer(serializers.Serializer):
    features = AdvancedPlaygroundFeatureSchemaSerializer(many=True)
    input = AdvancedPlaygroundRequestSchemaSerializer()
    warnings = _WarningsSerializer(required=False)
