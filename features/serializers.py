"""Request and response bodies of the feature endpoints, named as the specification names them
(`createFeatureSchema`, `featureSchema`, `tagSchema`, ...).

Response serializers read a `Feature` loaded by `features.selectors.load_feature_detail` or
returned by `features.services.create_feature`: both attach the same attributes
(`environment_list`, `tag_list`, `current_stage`, `dependency_list`, `child_names`,
`is_favorite`, `collaborator_list`), so the two endpoints answer the same shape.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from features.models import (
    Feature,
    FeatureEnvironment,
    FeatureStrategy,
    FeatureType,
    LifecycleStage,
    TagType,
)
from features.validators import (
    CONSTRAINT_OPERATORS,
    MAX_FLAG_NAME_LENGTH,
    MAX_WEIGHT,
    PAYLOAD_TYPES,
    WEIGHT_TYPES,
)
from flagadmin.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictListField,
    StrictSerializer,
    UrlFriendlyNameField,
)
from flagadmin.api.responses import ResponseShape

# --- request ---------------------------------------------------------------------------------


# A bound on one request's tags: far above real use, well below what one statement can carry.
MAX_TAGS_PER_FLAG = 100


@extend_schema_serializer(component_name="tagSchema")
class TagSchemaSerializer(StrictSerializer):
    """A tag: a value of a tag type. Used in requests and responses."""

    type = StrictCharField(
        min_length=2, max_length=50, help_text="The tag type; it must exist (e.g. `simple`)."
    )
    value = StrictCharField(min_length=2, max_length=50, help_text="The tag value.")


@extend_schema_serializer(component_name="createFeatureSchema")
class CreateFeatureSchemaSerializer(StrictSerializer):
    """A new flag. Other body fields (`archived`, `stale`, `createdAt`, `enabled`, `strategies`,
    `variants`, `project`, ...) are ignored: the server decides them."""

    name = UrlFriendlyNameField(
        max_length=MAX_FLAG_NAME_LENGTH,
        help_text="Unique flag name (across all projects, archived flags included), "
        "1-100 characters among `A-Z a-z 0-9 - _ . ! ~ * ' ( )`, not `.` or `..`.",
    )
    type = StrictChoiceField(
        choices=FeatureType.values, default=FeatureType.RELEASE, help_text="Flag type."
    )
    description = StrictCharField(
        allow_null=True,
        allow_blank=True,
        default=None,
        help_text='Description; `""` is stored as null.',
    )
    impressionData = StrictBooleanField(
        source="impression_data",
        default=False,
        help_text="Whether impression data is collected.",
    )
    tags = StrictListField(
        child=TagSchemaSerializer(),
        default=list,
        max_length=MAX_TAGS_PER_FLAG,
        help_text="Tags to add. The tag type must exist; new values are created; "
        f"repeated tags count once. At most {MAX_TAGS_PER_FLAG}.",
    )

    def validate_description(self, value: str | None) -> str | None:
        return value or None

    def validate_tags(self, value: list[dict[str, str]]) -> list[tuple[str, str]]:
        """Repeated tags collapse; every tag type must exist (one query when tags are sent)."""
        if not value:
            return []
        wanted = {tag["type"] for tag in value}
        known = set(TagType.objects.filter(name__in=wanted).values_list("name", flat=True))
        errors = {
            str(index): {"type": ["must be the name of an existing tag type"]}
            for index, tag in enumerate(value)
            if tag["type"] not in known
        }
        if errors:
            raise serializers.ValidationError(errors)
        return list(dict.fromkeys((tag["type"], tag["value"]) for tag in value))


# --- response: value objects stored in JSON columns --------------------------------------------


@extend_schema_serializer(component_name="constraintSchema")
class ConstraintSchemaSerializer(serializers.Serializer):
    contextName = serializers.CharField(help_text="Context field the constraint applies to.")
    operator = serializers.ChoiceField(choices=CONSTRAINT_OPERATORS)
    caseInsensitive = serializers.BooleanField(default=False)
    inverted = serializers.BooleanField(default=False)
    values = serializers.ListField(child=serializers.CharField(), required=False)
    value = serializers.CharField(required=False)


@extend_schema_serializer(component_name="variantPayloadSchema")
class PayloadSchemaSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=PAYLOAD_TYPES)
    value = serializers.CharField()


@extend_schema_serializer(component_name="overrideSchema")
class OverrideSchemaSerializer(serializers.Serializer):
    contextName = serializers.CharField()
    values = serializers.ListField(child=serializers.CharField())


@extend_schema_serializer(component_name="strategyVariantSchema")
class StrategyVariantSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    weight = serializers.IntegerField(min_value=0, max_value=MAX_WEIGHT)
    weightType = serializers.ChoiceField(choices=WEIGHT_TYPES)
    stickiness = serializers.CharField()
    payload = PayloadSchemaSerializer(required=False)


class StoredNumberField(serializers.FloatField):
    """A number written as stored: a weight of 500 stays `500`, as Unleash writes it, where
    DRF's FloatField would write `500.0`."""

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_serializer(component_name="variantSchema")
class VariantSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    weight = StoredNumberField(min_value=0, max_value=MAX_WEIGHT)
    weightType = serializers.ChoiceField(choices=WEIGHT_TYPES, required=False)
    stickiness = serializers.CharField(required=False)
    payload = PayloadSchemaSerializer(required=False)
    overrides = OverrideSchemaSerializer(many=True, required=False)


# --- response: the flag ------------------------------------------------------------------------


@extend_schema_serializer(component_name="featureStrategySchema")
class FeatureStrategySchemaSerializer(ResponseShape):
    id = serializers.UUIDField()
    name = serializers.CharField(help_text="Strategy type, e.g. `flexibleRollout`.")
    title = serializers.CharField(allow_null=True)
    disabled = serializers.BooleanField(allow_null=True)
    featureName = serializers.SerializerMethodField()
    sortOrder = serializers.IntegerField(source="sort_order")
    segments = serializers.SerializerMethodField()
    constraints = ConstraintSchemaSerializer(many=True)
    variants = StrategyVariantSchemaSerializer(many=True)
    parameters = serializers.DictField(child=serializers.CharField())

    def get_featureName(self, strategy: FeatureStrategy) -> str:
        return strategy.feature_environment.feature_id

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_segments(self, strategy: FeatureStrategy) -> list[int]:
        return [link.segment_id for link in strategy.segment_links.all()]


@extend_schema_serializer(component_name="featureEnvironmentSchema")
class FeatureEnvironmentSchemaSerializer(serializers.Serializer):
    name = serializers.CharField(source="environment_id")
    featureName = serializers.CharField(source="feature_id")
    environment = serializers.CharField(source="environment_id")
    type = serializers.CharField(source="environment.type")
    enabled = serializers.BooleanField()
    sortOrder = serializers.IntegerField(source="environment.sort_order")
    variantCount = serializers.SerializerMethodField()
    strategies = FeatureStrategySchemaSerializer(many=True, source="strategy_list")
    variants = serializers.SerializerMethodField()
    lastSeenAt = serializers.DateTimeField(source="last_seen_at", allow_null=True)
    hasStrategies = serializers.SerializerMethodField()
    hasEnabledStrategies = serializers.SerializerMethodField()

    def get_variantCount(self, env: FeatureEnvironment) -> int:
        return len(env.variants)

    @extend_schema_field(VariantSchemaSerializer(many=True))
    def get_variants(self, env: FeatureEnvironment) -> list[dict[str, Any]]:
        return _VARIANTS.to_representation(sorted_variants(env))

    def get_hasStrategies(self, env: FeatureEnvironment) -> bool:
        return bool(env.strategy_list)

    def get_hasEnabledStrategies(self, env: FeatureEnvironment) -> bool:
        return any(not strategy.disabled for strategy in env.strategy_list)


@extend_schema_serializer(component_name="featureCreatedBySchema")
class CreatedBySchemaSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField(source="display_name")
    imageUrl = serializers.CharField(source="image_url")


@extend_schema_serializer(component_name="featureLifecycleSchema")
class LifecycleSchemaSerializer(serializers.Serializer):
    stage = serializers.ChoiceField(choices=LifecycleStage.values)
    enteredStageAt = serializers.DateTimeField(source="entered_at")


@extend_schema_serializer(component_name="dependentFeatureSchema")
class DependencySchemaSerializer(serializers.Serializer):
    feature = serializers.CharField(source="parent_id", help_text="The parent flag.")
    enabled = serializers.BooleanField()
    variants = serializers.ListField(child=serializers.CharField())


@extend_schema_serializer(component_name="featureCollaboratorSchema")
class CollaboratorSchemaSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField(source="display_name")
    imageUrl = serializers.CharField(source="image_url")


@extend_schema_serializer(component_name="featureCollaboratorsSchema")
class CollaboratorsSchemaSerializer(serializers.Serializer):
    users = CollaboratorSchemaSerializer(
        many=True, source="*", help_text="Most recent change first."
    )


@extend_schema_serializer(component_name="featureSchema")
class FeatureSchemaSerializer(ResponseShape):
    """A flag with its environments, strategies, variants, tags, lifecycle and dependencies."""

    name = serializers.CharField()
    type = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    project = serializers.CharField(source="project_id")
    enabled = serializers.SerializerMethodField()
    stale = serializers.BooleanField()
    favorite = serializers.BooleanField(source="is_favorite")
    impressionData = serializers.BooleanField(source="impression_data")
    archived = serializers.BooleanField()
    archivedAt = serializers.DateTimeField(source="archived_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at", allow_null=True)
    createdBy = CreatedBySchemaSerializer(
        source="created_by", allow_null=True, help_text="Null when the creator was deleted."
    )
    lastSeenAt = serializers.DateTimeField(
        source="last_seen_at", allow_null=True, help_text="Deprecated: see the environments'."
    )
    environments = FeatureEnvironmentSchemaSerializer(many=True, source="environment_list")
    variants = serializers.SerializerMethodField()
    tags = TagSchemaSerializer(many=True, source="tag_list")
    children = serializers.ListField(child=serializers.CharField(), source="child_names")
    lifecycle = LifecycleSchemaSerializer(source="current_stage", allow_null=True)
    dependencies = DependencySchemaSerializer(many=True, source="dependency_list")
    collaborators = CollaboratorsSchemaSerializer(source="collaborator_list")

    def get_enabled(self, feature: Feature) -> bool:
        """True when the flag is on in at least one environment."""
        return any(env.enabled for env in feature.environment_list)

    @extend_schema_field(VariantSchemaSerializer(many=True))
    def get_variants(self, feature: Feature) -> list[dict[str, Any]]:
        """Deprecated: the variants of all environments by name (a later environment's variant
        replaces an earlier one's of the same name), as Unleash reports them."""
        return _VARIANTS.to_representation(merged_variants(feature))


def sorted_variants(env: FeatureEnvironment) -> list[dict[str, Any]]:
    return sorted(env.variants, key=lambda variant: variant["name"])


def merged_variants(feature: Feature) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for env in feature.environment_list:
        for variant in sorted_variants(env):
            merged[variant["name"]] = variant
    return list(merged.values())


_VARIANTS = VariantSchemaSerializer(many=True)
