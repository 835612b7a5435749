"""The Frontend API's bodies as Unleash 8.2's OpenAPI document names them. The flags' answer is
encoded by `frontend_api.toggles` (and the POST body read by `frontend_api.context`) rather than
through these: they describe the bodies for the OpenAPI document, and check the registration."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from client_api.serializers import parse_started
from flagadmin.api.fields import (
    StrictCharField,
    StrictListField,
    StrictNumberField,
    StrictSerializer,
)


@extend_schema_serializer(component_name="frontendApiFeatureVariantPayloadSchema")
class VariantPayloadSchemaSerializer(serializers.Serializer):
    type = serializers.CharField(help_text="The format of the payload: json, csv, string, number.")
    value = serializers.CharField(help_text="The payload value stringified.")


@extend_schema_serializer(component_name="frontendApiFeatureVariantSchema")
class VariantSchemaSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The variant's name; `disabled` when it has none.")
    enabled = serializers.BooleanField(help_text="Whether the variant is enabled.")
    payload = VariantPayloadSchemaSerializer(
        required=False, help_text="Extra data configured for this variant (absent: none)."
    )
    feature_enabled = serializers.BooleanField(help_text="Whether the flag is enabled.")
    featureEnabled = serializers.BooleanField(help_text="Whether the flag is enabled.")


@extend_schema_serializer(component_name="frontendApiFeatureSchema")
class FrontendApiFeatureSchemaSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Unique feature name.")
    enabled = serializers.BooleanField(help_text="Always `true`.")
    variant = VariantSchemaSerializer()
    impressionData = serializers.BooleanField(
        help_text="Whether impression data is collected for the flag."
    )


@extend_schema_serializer(component_name="frontendApiFeaturesSchema")
class FrontendApiFeaturesSchemaSerializer(serializers.Serializer):
    toggles = FrontendApiFeatureSchemaSerializer(many=True, help_text="The enabled flags.")


@extend_schema_serializer(component_name="sdkContextSchema")
class SdkContextSchemaSerializer(serializers.Serializer):
    """The Unleash context as SDKs model it; other fields are taken as properties."""

    appName = serializers.CharField(required=False, min_length=1)
    currentTime = serializers.DateTimeField(
        required=False,
        help_text="Taken as a property, as Unleash takes it here: date constraints compare "
        "with the time of the request.",
    )
    environment = serializers.CharField(required=False)
    properties = serializers.DictField(child=serializers.CharField(), required=False)
    remoteAddress = serializers.CharField(
        required=False, help_text="Default: the address of the caller."
    )
    sessionId = serializers.CharField(required=False, help_text="Default: a new random one.")
    userId = serializers.CharField(required=False)


@extend_schema_serializer(component_name="frontendApiFeaturesPostSchema")
class FrontendApiFeaturesPostSchemaSerializer(serializers.Serializer):
    context = SdkContextSchemaSerializer(required=False)


@extend_schema_serializer(component_name="frontendApiClientSchema")
class FrontendApiClientSchemaSerializer(StrictSerializer):
    """A frontend SDK's registration: checked, then answered 200 (Unleash keeps nothing)."""

    appName = StrictCharField(allow_blank=True)
    instanceId = StrictCharField(required=False, allow_blank=True)
    sdkVersion = StrictCharField(required=False, allow_blank=True)
    environment = StrictCharField(required=False, allow_blank=True)
    interval = StrictNumberField(help_text="Metrics interval, milliseconds.")
    started = serializers.JSONField(
        help_text="When the client started: an RFC 3339 date-time or a number."
    )
    strategies = StrictListField(child=StrictCharField(allow_blank=True))

    def validate_started(self, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise serializers.ValidationError("must be string or number")
        if isinstance(value, str) and parse_started(value) is None:
            raise serializers.ValidationError('must match format "date-time"')
        return value
