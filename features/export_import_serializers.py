"""Bodies of Unleash's import and export (`exportQuerySchema`, `importTogglesSchema`,
`exportResultSchema`, `importTogglesValidateSchema`), as Unleash 8.2 names and requires them.

An export from Unleash is accepted as it is: fields this server does not keep (`createdAt`,
`lastSeenAt`, a strategy's `id`, `links`) are taken and left out, as Unleash's own validator
lets additional properties through."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from features.models import FeatureType
from features.strategy_serializers import CreateFeatureStrategySchemaSerializer
from features.validators import MAX_FLAG_NAME_LENGTH
from features.variant_serializers import CreateVariantSchemaSerializer, check_variant_list
from flagadmin.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictDictField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
    UrlFriendlyNameField,
)


def _optional_text(**kwargs: Any) -> StrictCharField:
    """A text that may be left out, null or empty, as Unleash's schemas allow."""
    return StrictCharField(required=False, allow_null=True, allow_blank=True, **kwargs)


@extend_schema_serializer(component_name="exportQuerySchema")
class ExportQuerySchemaSerializer(StrictSerializer):
    """Which flags to export, from which environment: by `features` (names; an empty list is
    every flag), by `tag` (a tag value), or by `project`; one of the three is required."""

    environment = StrictCharField(help_text="The environment to export from.")
    downloadFile = StrictBooleanField(
        required=False, help_text="Accepted as Unleash accepts it; the answer is the JSON."
    )
    features = StrictListField(
        child=StrictCharField(min_length=1), required=False, help_text="Flags by name."
    )
    tag = StrictCharField(required=False, help_text="Flags carrying a tag with this value.")
    project = StrictCharField(required=False, help_text="Every active flag of the project.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not any(key in attrs for key in ("features", "tag", "project")):
            raise serializers.ValidationError(
                {"features": ["is required (or `tag`, or `project`)"]}
            )
        return attrs


class ImportFeatureSerializer(StrictSerializer):
    name = UrlFriendlyNameField(max_length=MAX_FLAG_NAME_LENGTH)
    description = _optional_text()
    type = StrictChoiceField(choices=FeatureType.values, required=False)
    project = _optional_text()
    stale = StrictBooleanField(required=False, allow_null=True)
    impressionData = StrictBooleanField(required=False, allow_null=True)
    archived = StrictBooleanField(required=False, allow_null=True)


@extend_schema_serializer(component_name="importFeatureStrategySchema")
class ImportFeatureStrategySerializer(CreateFeatureStrategySchemaSerializer):
    """A strategy of the export: `createFeatureStrategySchema` with the flag it belongs to and
    the exporting server's id (left out: the import gives each strategy a new one)."""

    featureName = StrictCharField(required=False, allow_null=True)
    id = _optional_text()

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        # The parent's `validate_parameters` reads the strategy's name from `initial_data`,
        # which a list's child serializer has not: each item is its initial data in turn.
        self.initial_data = data
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {**super().validate(attrs), "feature_name": attrs.get("featureName")}


class ImportFeatureEnvironmentSerializer(StrictSerializer):
    name = StrictCharField(required=False)
    featureName = StrictCharField(required=False, allow_null=True)
    environment = StrictCharField(required=False, allow_null=True)
    enabled = StrictBooleanField()
    variants = StrictListField(child=CreateVariantSchemaSerializer(), required=False)

    def validate_variants(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return check_variant_list(value)


class ImportLegalValueSerializer(StrictSerializer):
    value = StrictCharField(max_length=100)
    description = _optional_text()


class ImportContextFieldSerializer(StrictSerializer):
    name = UrlFriendlyNameField(max_length=100)
    description = _optional_text()
    stickiness = StrictBooleanField(required=False, allow_null=True)
    sortOrder = StrictIntegerField(required=False, allow_null=True)
    legalValues = StrictListField(child=ImportLegalValueSerializer(), required=False)


class ImportFeatureTagSerializer(StrictSerializer):
    featureName = StrictCharField()
    tagType = _optional_text()
    tagValue = StrictCharField()


class ImportSegmentSerializer(StrictSerializer):
    id = StrictIntegerField()
    name = StrictCharField()


class ImportTagTypeSerializer(StrictSerializer):
    name = StrictCharField(max_length=50)
    description = _optional_text()
    icon = _optional_text()
    color = _optional_text()


class ImportParentSerializer(StrictSerializer):
    feature = StrictCharField()
    enabled = StrictBooleanField(required=False, default=True)
    variants = StrictListField(child=StrictCharField(), required=False, default=list)


class ImportDependencySerializer(StrictSerializer):
    feature = StrictCharField()
    dependencies = StrictListField(child=ImportParentSerializer())


class ImportLinkSerializer(StrictSerializer):
    feature = StrictCharField()
    links = StrictListField(child=StrictDictField())


@extend_schema_serializer(component_name="exportResultSchema")
class ExportResultSchemaSerializer(StrictSerializer):
    """The flags of an export and what they need: their strategies, state and variants in the
    environment, tags and tag types, the context fields and segments the strategies use, the
    dependencies on parents; `links` (Unleash's flag links) is always empty here."""

    features = StrictListField(child=ImportFeatureSerializer())
    featureStrategies = StrictListField(child=ImportFeatureStrategySerializer())
    featureEnvironments = StrictListField(
        child=ImportFeatureEnvironmentSerializer(), required=False
    )
    contextFields = StrictListField(child=ImportContextFieldSerializer(), required=False)
    featureTags = StrictListField(child=ImportFeatureTagSerializer(), required=False)
    segments = StrictListField(child=ImportSegmentSerializer(), required=False)
    tagTypes = StrictListField(child=ImportTagTypeSerializer())
    dependencies = StrictListField(child=ImportDependencySerializer(), required=False)
    links = StrictListField(child=ImportLinkSerializer(), required=False)


@extend_schema_serializer(component_name="importTogglesSchema")
class ImportTogglesSchemaSerializer(StrictSerializer):
    """An export to import into `project`'s `environment`."""

    project = StrictCharField(help_text="The project to import into.")
    environment = StrictCharField(help_text="The environment to import into.")
    data = ExportResultSchemaSerializer()


class ImportTogglesValidateItemSchemaSerializer(serializers.Serializer):
    message = serializers.CharField()
    affectedItems = serializers.ListField(child=serializers.CharField())


@extend_schema_serializer(component_name="importTogglesValidateSchema")
class ImportTogglesValidateSchemaSerializer(serializers.Serializer):
    errors = ImportTogglesValidateItemSchemaSerializer(many=True)
    warnings = ImportTogglesValidateItemSchemaSerializer(many=True)
    permissions = ImportTogglesValidateItemSchemaSerializer(many=True)
