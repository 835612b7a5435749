"""Bodies of the client API, named as Unleash's OpenAPI document names them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from features.serializers import (
    ConstraintSchemaSerializer,
    DependencySchemaSerializer,
    StrategyVariantSchemaSerializer,
    VariantSchemaSerializer,
)
from flagadmin.api.fields import (
    StrictCharField,
    StrictDictField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
)

# --- GET /api/client/features ------------------------------------------------------------------


@extend_schema_serializer(component_name="clientFeatureStrategySchema")
class ClientStrategySchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    constraints = ConstraintSchemaSerializer(many=True)
    parameters = serializers.DictField(child=serializers.CharField())
    variants = StrategyVariantSchemaSerializer(many=True)


@extend_schema_serializer(component_name="clientFeatureSchema")
class ClientFeatureSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    enabled = serializers.BooleanField(help_text="On in the token's environment.")
    project = serializers.CharField()
    stale = serializers.BooleanField()
    strategies = ClientStrategySchemaSerializer(
        many=True, help_text="Enabled strategies, segment constraints inlined."
    )
    variants = VariantSchemaSerializer(many=True)
    description = serializers.CharField(allow_null=True)
    impressionData = serializers.BooleanField()
    dependencies = DependencySchemaSerializer(
        many=True, required=False, help_text="Present when the flag has parents."
    )


@extend_schema_serializer(component_name="clientFeaturesQuerySchema")
class ClientFeaturesQuerySchemaSerializer(serializers.Serializer):
    environment = serializers.CharField()
    inlineSegmentConstraints = serializers.BooleanField()
    project = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Absent for all projects."
    )


@extend_schema_serializer(component_name="clientFeaturesMetaSchema")
class ClientFeaturesMetaSchemaSerializer(serializers.Serializer):
    revisionId = serializers.IntegerField()
    etag = serializers.CharField()
    queryHash = serializers.CharField()


@extend_schema_serializer(component_name="clientFeaturesSchema")
class ClientFeaturesSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    features = ClientFeatureSchemaSerializer(many=True)
    query = ClientFeaturesQuerySchemaSerializer()
    meta = ClientFeaturesMetaSchemaSerializer()


# --- POST /api/client/register and /api/client/metrics -----------------------------------------

SDK_FIELDS_HELP = "Reported by the SDK; kept as sent."


class SdkIdentitySerializer(StrictSerializer):
    appName = StrictCharField(max_length=255)
    instanceId = StrictCharField(max_length=255, required=False, default="default")
    sdkVersion = StrictCharField(max_length=255, required=False, allow_blank=True, default="")
    environment = StrictCharField(required=False, help_text="Ignored: the token's counts.")
    platformName = StrictCharField(required=False, allow_blank=True, help_text=SDK_FIELDS_HELP)
    platformVersion = StrictCharField(required=False, allow_blank=True, help_text=SDK_FIELDS_HELP)
    yggdrasilVersion = StrictCharField(
        required=False, allow_blank=True, allow_null=True, help_text=SDK_FIELDS_HELP
    )
    specVersion = StrictCharField(required=False, allow_blank=True, help_text=SDK_FIELDS_HELP)


@extend_schema_serializer(component_name="clientApplicationSchema")
class ClientApplicationSchemaSerializer(SdkIdentitySerializer):
    interval = serializers.IntegerField(min_value=0, help_text="Poll interval, milliseconds.")
    started = serializers.JSONField(help_text="RFC 3339 date-time or Unix time.")
    strategies = StrictListField(child=StrictCharField(), help_text="Strategies it knows.")


@extend_schema_serializer(component_name="clientMetricsToggleSchema")
class ToggleCountSchemaSerializer(StrictSerializer):
    yes = StrictIntegerField(min_value=0, default=0)
    no = StrictIntegerField(min_value=0, default=0)
    variants = StrictDictField(child=StrictIntegerField(min_value=0), required=False)


@extend_schema_serializer(component_name="clientMetricsBucketSchema")
class MetricsBucketSchemaSerializer(StrictSerializer):
    start = serializers.JSONField(help_text="Start of the period the counts cover.")
    stop = serializers.JSONField(help_text="End of the period.")
    toggles = StrictDictField(child=ToggleCountSchemaSerializer())


@extend_schema_serializer(component_name="clientMetricsSchema")
class ClientMetricsSchemaSerializer(SdkIdentitySerializer):
    bucket = MetricsBucketSchemaSerializer(allow_null=True, required=False)
