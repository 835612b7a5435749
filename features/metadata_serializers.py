"""Request and response bodies of the flag metadata, stale, name validation and archive
endpoints (Unleash's `updateFeatureSchema`, `patchesSchema`, `batchStaleSchema`,
`validateFeatureSchema`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from features.models import FeatureType
from features.validators import MAX_FLAG_NAME_LENGTH
from flagadmin.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictListField,
    StrictSerializer,
    UrlFriendlyNameField,
)
from flagadmin.api.responses import ResponseShape

# The flag types as choices (value and label alike), named `FeatureTypeEnum` in the document.
FEATURE_TYPES = FeatureType.values
PATCH_OPERATIONS = ("add", "remove", "replace", "copy", "move", "test")


@extend_schema_serializer(component_name="updateFeatureSchema")
class UpdateFeatureSchemaSerializer(StrictSerializer):
    """What describes a flag. Fields left out stay as they are; `name` may only repeat the
    flag's name; other fields (`project`, `archived`, `createdAt`, ...) are ignored."""

    name = StrictCharField(required=False, help_text="The flag's own name (it cannot change).")
    description = StrictCharField(
        required=False, allow_null=True, allow_blank=True, help_text='`""` is stored as null.'
    )
    type = StrictChoiceField(choices=FEATURE_TYPES, required=False, help_text="Flag type.")
    stale = StrictBooleanField(required=False, help_text="Whether the flag is stale.")
    impressionData = StrictBooleanField(
        source="impression_data", required=False, help_text="Whether impression data is collected."
    )


@extend_schema_serializer(component_name="patchSchema")
class PatchSchemaSerializer(StrictSerializer):
    """One JSON Patch (RFC 6902) operation."""

    op = StrictChoiceField(choices=PATCH_OPERATIONS)
    path = StrictCharField(allow_blank=True, help_text="A JSON Pointer, e.g. `/stale`.")
    value = serializers.JSONField(required=False, help_text="Any JSON value.")

    def get_fields(self) -> dict[str, serializers.Field]:
        # `from` is a Python keyword: it cannot be declared as a class attribute.
        fields = super().get_fields()
        fields["from"] = StrictCharField(
            required=False, allow_blank=True, help_text="The source pointer of `copy` and `move`."
        )
        return fields


@extend_schema_serializer(component_name="batchStaleSchema")
class BatchStaleSchemaSerializer(StrictSerializer):
    features = StrictListField(
        child=StrictCharField(), help_text="Flag names; names of no flag are ignored."
    )
    stale = StrictBooleanField(help_text="`true`: mark stale; `false`: not stale.")


@extend_schema_serializer(component_name="validateFeatureSchema")
class ValidateFeatureSchemaSerializer(StrictSerializer):
    name = UrlFriendlyNameField(max_length=MAX_FLAG_NAME_LENGTH, help_text="The name to check.")
    projectId = StrictCharField(
        required=False, allow_null=True, help_text="Ignored (no naming patterns here)."
    )


@extend_schema_serializer(component_name="featureMetadataSchema")
class FeatureMetadataSchemaSerializer(ResponseShape):
    """The flag's own row, as Unleash answers `updateFeature` and `patchFeature`."""

    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    type = serializers.CharField()
    project = serializers.CharField(source="project_id")
    stale = serializers.BooleanField()
    createdAt = serializers.DateTimeField(source="created_at")
    impressionData = serializers.BooleanField(source="impression_data")
    archived = serializers.SerializerMethodField()

    def get_archived(self, feature) -> bool:
        return feature.archived_at is not None
