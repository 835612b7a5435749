"""Bodies of the segment endpoints, named as Unleash's OpenAPI document names them
(`upsertSegmentSchema`, `adminSegmentSchema`, `segmentsSchema`, `segmentStrategiesSchema`)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from features.regexes import regex_count_problem
from features.serializers import ConstraintSchemaSerializer
from features.strategy_serializers import CreateConstraintSchemaSerializer
from flagadmin.api.fields import (
    ClosedSerializer,
    NumberAsStringField,
    StrictCharField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
)
from flagadmin.api.responses import ResponseShape


@extend_schema_serializer(component_name="upsertSegmentSchema")
class UpsertSegmentSchemaSerializer(StrictSerializer):
    """Data used to create or update a segment."""

    # Numbers are taken as their strings, as Unleash's request validator coerces them.
    name = NumberAsStringField(max_length=255, help_text="The name of the segment.")
    description = NumberAsStringField(
        allow_null=True,
        allow_blank=True,
        required=False,
        help_text="What the segment is for. Left out of an update: kept as it is.",
    )
    project = StrictCharField(
        allow_null=True,
        allow_blank=True,
        required=False,
        help_text="The project the segment belongs to, if any (its strategies only may use "
        "it). Left out of an update: none.",
    )
    constraints = StrictListField(
        child=CreateConstraintSchemaSerializer(),
        help_text="The constraints that make up the segment (all must hold).",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        # Counted before any REGEX pattern is parsed (`features.regexes`).
        if isinstance(data, dict) and (problem := regex_count_problem(data.get("constraints"))):
            raise serializers.ValidationError({"constraints": [problem]})
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments of `create_segment` / `update_segment`."""
        return {
            "name": attrs["name"],
            "description": attrs.get("description"),
            "keep_description": "description" not in attrs,
            "project_id": attrs.get("project") or None,
            "constraints": [dict(c) for c in attrs["constraints"]],
        }


@extend_schema_serializer(component_name="adminSegmentSchema")
class AdminSegmentSchemaSerializer(ResponseShape):
    """A segment. `project` only for a project's segment; `usedInFeatures` and
    `usedInProjects` (active flags only) in the list of segments."""

    id = serializers.IntegerField(min_value=0)
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    project = serializers.CharField(required=False, source="project_id")
    constraints = ConstraintSchemaSerializer(many=True)
    createdBy = serializers.CharField(source="created_by", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    usedInProjects = serializers.IntegerField(
        source="used_in_projects", required=False, min_value=0
    )
    usedInFeatures = serializers.IntegerField(
        source="used_in_features", required=False, min_value=0
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        # Unleash leaves out what a segment does not have (its store maps them to undefined).
        if data.get("project") is None:
            data.pop("project", None)
        for key in ("usedInProjects", "usedInFeatures"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


@extend_schema_serializer(component_name="segmentsSchema", many=False)
class SegmentsSchemaSerializer(serializers.Serializer):
    segments = AdminSegmentSchemaSerializer(many=True)


@extend_schema_serializer(component_name="segmentStrategySchema")
class SegmentStrategySchemaSerializer(ResponseShape):
    id = serializers.CharField(help_text="The strategy's id.")
    projectId = serializers.CharField(source="feature_environment.feature.project_id")
    featureName = serializers.CharField(source="feature_environment.feature_id")
    strategyName = serializers.CharField(source="name", help_text="The strategy type.")
    environment = serializers.CharField(source="feature_environment.environment_id")


@extend_schema_serializer(component_name="segmentStrategiesSchema")
class SegmentStrategiesSchemaSerializer(serializers.Serializer):
    """The strategies (of active flags) that use a segment. `changeRequestStrategies` is
    always empty: there are no change requests."""

    strategies = SegmentStrategySchemaSerializer(many=True)
    changeRequestStrategies = serializers.ListField(child=SegmentStrategySchemaSerializer())


@extend_schema_serializer(component_name="nameSchema")
class SegmentNameSchemaSerializer(ClosedSerializer):
    """An object with a name (and nothing else)."""

    name = StrictCharField(allow_blank=True, help_text="The name to check.")


@extend_schema_serializer(component_name="updateFeatureStrategySegmentsSchema")
class UpdateFeatureStrategySegmentsSchemaSerializer(StrictSerializer):
    """The segments a strategy is to use, all of them: the ones it uses and that are not listed
    are taken off it."""

    projectId = StrictCharField(help_text="The project of the strategy's flag.")
    strategyId = StrictCharField(help_text="The strategy's id.")
    environmentId = StrictCharField(help_text="The environment the strategy is in.")
    segmentIds = StrictListField(
        child=StrictIntegerField(min_value=0),
        help_text="The segments' ids (a repeated one counts once).",
    )
