"""Bodies of the client API, named as Unleash's OpenAPI document names them."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils.dateparse import parse_datetime
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
# The most a metrics report may count for a flag's yes or no: an int4, so the hourly buckets'
# bigint sums take billions of reports in one hour before they saturate.
MAX_COUNT = 2**31 - 1


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
    started = serializers.JSONField(
        help_text="When the SDK started: an RFC 3339 date-time, or Unix time (seconds, or "
        "milliseconds from 10^11 on, as JavaScript's Date gives). Another value is kept as "
        "unknown."
    )
    strategies = StrictListField(child=StrictCharField(), help_text="Strategies it knows.")

    def validate_started(self, value: object) -> datetime | None:
        """The start time, aware in UTC; None when the value says none."""
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            seconds = value / 1000 if abs(value) >= 10**11 else value
            try:
                return datetime.fromtimestamp(seconds, tz=UTC)
            except (OverflowError, OSError, ValueError):
                return None
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value)
                if parsed is None:
                    return None
                # In UTC here: an offset can carry a time past year 9999 or before year 1,
                # which no database column holds.
                return parsed.replace(tzinfo=parsed.tzinfo or UTC).astimezone(UTC)
            except (ValueError, OverflowError):
                return None
        return None


@extend_schema_serializer(component_name="clientMetricsToggleSchema")
class ToggleCountSchemaSerializer(StrictSerializer):
    yes = StrictIntegerField(min_value=0, max_value=MAX_COUNT, default=0)
    no = StrictIntegerField(min_value=0, max_value=MAX_COUNT, default=0)
    variants = StrictDictField(
        child=StrictIntegerField(min_value=0, max_value=MAX_COUNT), required=False
    )


@extend_schema_serializer(component_name="clientMetricsBucketSchema")
class MetricsBucketSchemaSerializer(StrictSerializer):
    start = serializers.JSONField(help_text="Start of the period the counts cover.")
    stop = serializers.JSONField(help_text="End of the period.")
    toggles = StrictDictField(child=ToggleCountSchemaSerializer())


@extend_schema_serializer(component_name="clientMetricsSchema")
class ClientMetricsSchemaSerializer(SdkIdentitySerializer):
    bucket = MetricsBucketSchemaSerializer(allow_null=True, required=False)


def _required() -> list[serializers.ErrorDetail]:
    return [serializers.ErrorDetail("This field is required.", code="required")]


def _count(value: object) -> str | None:
    """The problem with a yes/no count, if any (JSON integers from 0 to MAX_COUNT only)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be integer"
    if value < 0:
        return "must be >= 0"
    return f"must be <= {MAX_COUNT}" if value > MAX_COUNT else None


def parse_client_metrics(data: object) -> tuple[str, dict[str, tuple[int, int]]]:
    """(appName, {flag: (yes, no)}) of a `clientMetricsSchema` body, checked as
    `ClientMetricsSchemaSerializer` documents it. By hand rather than through the serializer:
    reports arrive hundreds of times a second, and DRF's nested fields cost ten times the
    database's work per report. Errors come out in the same shape (paths under /body)."""
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": ["must be object"]})
    errors: dict[str, object] = {}
    app_name = data.get("appName")
    if "appName" not in data:
        errors["appName"] = _required()
    elif not isinstance(app_name, str) or not app_name.strip():
        errors["appName"] = ["must be a non-empty string"]
    elif len(app_name) > 255:
        errors["appName"] = ["must NOT have more than 255 characters"]
    for name in ("instanceId", "sdkVersion"):
        if name in data and not isinstance(data[name], str):
            errors[name] = ["must be string"]
    counts: dict[str, tuple[int, int]] = {}
    bucket = data.get("bucket")
    if bucket is not None:
        if not isinstance(bucket, dict):
            errors["bucket"] = ["must be object"]
        elif "toggles" not in bucket:
            errors["bucket"] = {"toggles": _required()}
        elif not isinstance(bucket["toggles"], dict):
            errors["bucket"] = {"toggles": ["must be object"]}
        else:
            toggle_errors: dict[str, object] = {}
            for flag, toggle in bucket["toggles"].items():
                if not isinstance(toggle, dict):
                    toggle_errors[flag] = ["must be object"]
                    continue
                problems = {
                    key: [problem]
                    for key in ("yes", "no")
                    if key in toggle and (problem := _count(toggle[key]))
                }
                if problems:
                    toggle_errors[flag] = problems
                else:
                    counts[flag] = (toggle.get("yes", 0), toggle.get("no", 0))
            if toggle_errors:
                errors["bucket"] = {"toggles": toggle_errors}
    if errors:
        raise serializers.ValidationError(errors)
    return app_name, counts
