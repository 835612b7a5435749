"""Bodies of the client API, named as Unleash's OpenAPI document names them."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from django.http import QueryDict
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema_serializer
from rest_framework import serializers

from client_api.selectors import FeatureFilter
from features.serializers import (
    ConstraintSchemaSerializer,
    DependencySchemaSerializer,
    StrategyVariantSchemaSerializer,
    VariantSchemaSerializer,
)
from flagadmin.api.errors import bounded_validation_error
from flagadmin.api.fields import (
    StrictCharField,
    StrictDictField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
    UrlFriendlyNameField,
)
from flagadmin.core.names import is_url_friendly

# --- GET /api/client/features ------------------------------------------------------------------

# Unleash's pattern for a `tag` query value (unanchored, as Unleash's validator applies it).
TAG_QUERY_RE = re.compile(r"\w+:.+", re.ASCII)
# No flag, tag or project holds one, and PostgreSQL cannot compare text with a NUL.
CONTROL_CHARACTER_RE = re.compile(r"[\x00-\x1f\x7f]")
NUL_PROBLEM = "must not contain the NUL character (\\u0000)"
CONTROL_PROBLEM = "must not contain control characters (\\u0001 to \\u001f, \\u007f)"
NOT_URL_FRIENDLY = UrlFriendlyNameField.default_error_messages["not_url_friendly"]


CLIENT_FEATURES_QUERY = [
    OpenApiParameter(
        "tag",
        str,
        many=True,
        description="`type:value`; only flags with one of the tags given (repeatable).",
    ),
    OpenApiParameter(
        "project",
        str,
        many=True,
        description="Only flags of these projects (repeatable); a token of fewer than every "
        "project keeps its own.",
    ),
    OpenApiParameter("namePrefix", str, description="Only flags whose name starts with it."),
]


def parse_feature_filter(query: QueryDict) -> FeatureFilter:
    """The `tag`, `project` and `namePrefix` parameters of GET /api/client/features (each may
    repeat but `namePrefix`); any other parameter is ignored, as Unleash does. A value Unleash
    refuses is a 400 naming each one."""
    sent = {
        "tag": query.getlist("tag"),
        "project": query.getlist("project"),
        "namePrefix": query.getlist("namePrefix"),
    }
    problems: dict[str, object] = {}
    tag_problems = [
        _control_problem(value)
        or ({} if TAG_QUERY_RE.search(value) else ["must be a tag as `type:value`"])
        for value in sent["tag"]
    ]
    if any(tag_problems):
        problems["tag"] = tag_problems
    project_problems = [
        _control_problem(value) or ({} if is_url_friendly(value) else [NOT_URL_FRIENDLY])
        for value in sent["project"]
    ]
    if any(project_problems):
        problems["project"] = project_problems
    prefixes = sent["namePrefix"]
    if len(prefixes) > 1:
        problems["namePrefix"] = ["must be string"]
    elif prefixes == [""]:
        problems["namePrefix"] = ["must NOT have fewer than 1 characters"]
    elif prefixes and _control_problem(prefixes[0]):
        problems["namePrefix"] = _control_problem(prefixes[0])
    if problems:
        # Quote a single namePrefix as the string it is.
        sent["namePrefix"] = prefixes[0] if len(prefixes) == 1 else prefixes
        raise bounded_validation_error(problems, sent, location="query")
    # As sent, repeats included: Unleash echoes them so.
    return FeatureFilter(
        tags=tuple(tuple(value.split(":", 1)) for value in sent["tag"]),
        projects=tuple(sent["project"]),
        name_prefix=prefixes[0] if prefixes else None,
    )


def _control_problem(value: str) -> list[str]:
    found = CONTROL_CHARACTER_RE.search(value)
    if found is None:
        return []
    return [NUL_PROBLEM if "\x00" in value else CONTROL_PROBLEM]


@extend_schema_serializer(component_name="clientFeatureStrategySchema")
class ClientStrategySchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    constraints = ConstraintSchemaSerializer(many=True)
    parameters = serializers.DictField(child=serializers.CharField())
    variants = StrategyVariantSchemaSerializer(many=True)
    segments = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="For SDKs of client specification 4.2 or later: the ids of the segments the "
        "strategy uses (listed in the body's `segments`), in order; absent when it uses none. "
        "Earlier ones get their constraints inlined into `constraints` instead.",
    )


@extend_schema_serializer(component_name="clientSegmentSchema")
class ClientSegmentSchemaSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    constraints = ConstraintSchemaSerializer(many=True)


@extend_schema_serializer(component_name="clientFeatureSchema")
class ClientFeatureSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    enabled = serializers.BooleanField(help_text="On in the token's environment.")
    project = serializers.CharField()
    stale = serializers.BooleanField()
    strategies = ClientStrategySchemaSerializer(
        many=True,
        help_text="Enabled strategies: segments' constraints inlined, or (client specification "
        "4.2 or later) the segments named by id.",
    )
    variants = VariantSchemaSerializer(many=True)
    description = serializers.CharField(allow_null=True)
    impressionData = serializers.BooleanField()
    dependencies = DependencySchemaSerializer(
        many=True, required=False, help_text="Present when the flag has parents."
    )


@extend_schema_serializer(component_name="clientFeaturesQuerySchema")
class ClientFeaturesQuerySchemaSerializer(serializers.Serializer):
    tag = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(), min_length=2, max_length=2),
        required=False,
        help_text="The `tag` query parameters as [type, value] pairs; absent without any.",
    )
    project = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="The token's projects, or for a token of every project the `project` query "
        "parameters; absent for all projects.",
    )
    namePrefix = serializers.CharField(required=False, help_text="As sent; absent without.")
    environment = serializers.CharField()
    inlineSegmentConstraints = serializers.BooleanField()


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
    segments = ClientSegmentSchemaSerializer(
        many=True,
        required=False,
        help_text="For SDKs of client specification 4.2 or later: every segment a strategy "
        "uses (of any flag, project or environment, as Unleash lists them), by name.",
    )
    meta = ClientFeaturesMetaSchemaSerializer()


# --- POST /api/client/register and /api/client/metrics -----------------------------------------

SDK_FIELDS_HELP = "Reported by the SDK; kept as sent."
# The message of a time field sent as null (the one value refused: any other is kept or read
# as unknown).
TIME_EXPECTED = "must be a date-time or a number"
# The most a metrics report may count for a flag's yes or no: an int4, so the hourly buckets'
# bigint sums take billions of reports in one hour before they saturate.
MAX_COUNT = 2**31 - 1


class SdkIdentitySerializer(StrictSerializer):
    appName = StrictCharField(max_length=255)
    # The optional fields take `null` as Unleash does: Unleash Edge sends every field it has no
    # value for as `null` (`platformName`, `platformVersion` in its own registration).
    instanceId = StrictCharField(
        max_length=255,
        required=False,
        allow_null=True,
        default="default",
        help_text="`default` when absent or `null`.",
    )
    sdkVersion = StrictCharField(max_length=255, required=False, allow_blank=True, default="")
    environment = StrictCharField(
        required=False, allow_null=True, help_text="Ignored: the token's counts."
    )
    platformName = StrictCharField(
        required=False, allow_blank=True, allow_null=True, help_text=SDK_FIELDS_HELP
    )
    platformVersion = StrictCharField(
        required=False, allow_blank=True, allow_null=True, help_text=SDK_FIELDS_HELP
    )
    yggdrasilVersion = StrictCharField(
        required=False, allow_blank=True, allow_null=True, help_text=SDK_FIELDS_HELP
    )
    specVersion = StrictCharField(
        required=False, allow_blank=True, allow_null=True, help_text=SDK_FIELDS_HELP
    )

    def validate_instanceId(self, value: str | None) -> str:
        return "default" if value is None else value


@extend_schema_serializer(component_name="clientApplicationSchema")
class ClientApplicationSchemaSerializer(SdkIdentitySerializer):
    interval = StrictIntegerField(min_value=0, help_text="Poll interval, milliseconds.")
    started = serializers.JSONField(
        error_messages={"null": TIME_EXPECTED},
        help_text="When the SDK started: an RFC 3339 date-time, or Unix time (seconds, or "
        "milliseconds from 10^11 on, as JavaScript's Date gives). Another value is kept as "
        "unknown.",
    )
    strategies = StrictListField(child=StrictCharField(), help_text="Strategies it knows.")

    def validate_started(self, value: object) -> datetime | None:
        return parse_started(value)


def parse_started(value: object) -> datetime | None:
    """An SDK's start time, aware in UTC; None when the value says none."""
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
    start = serializers.JSONField(
        error_messages={"null": TIME_EXPECTED}, help_text="Start of the period the counts cover."
    )
    stop = serializers.JSONField(
        error_messages={"null": TIME_EXPECTED}, help_text="End of the period."
    )
    toggles = StrictDictField(child=ToggleCountSchemaSerializer())


@extend_schema_serializer(component_name="clientMetricsSchema")
class ClientMetricsSchemaSerializer(SdkIdentitySerializer):
    bucket = MetricsBucketSchemaSerializer(allow_null=True, required=False)


def _required() -> list[serializers.ErrorDetail]:
    return [serializers.ErrorDetail("This field is required.", code="required")]


def as_count(value: object) -> object:
    """A count sent as a string of digits is that number, as Unleash's validator coerces it
    (measured: `"yes": "5"` is 202 on Unleash 8.2); anything else as it is."""
    digits = value.strip() if isinstance(value, str) else ""
    # At most 19 digits: more is past any count (and past Python's int() limit at 4,300).
    if digits.isdigit() and digits.isascii() and len(digits) <= 19:
        return int(digits)
    return value


def _count(value: object) -> str | None:
    """The problem with a yes/no count, if any (integers from 0 to MAX_COUNT only)."""
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
    if data.get("instanceId") is not None and not isinstance(data["instanceId"], str):
        errors["instanceId"] = ["must be string"]
    if "sdkVersion" in data and not isinstance(data["sdkVersion"], str):
        errors["sdkVersion"] = ["must be string"]
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
                given = {key: as_count(toggle[key]) for key in ("yes", "no") if key in toggle}
                problems = {
                    key: [problem] for key, value in given.items() if (problem := _count(value))
                }
                if problems:
                    toggle_errors[flag] = problems
                else:
                    counts[flag] = (given.get("yes", 0), given.get("no", 0))
            if toggle_errors:
                errors["bucket"] = {"toggles": toggle_errors}
    if errors:
        raise serializers.ValidationError(errors)
    return app_name, counts
