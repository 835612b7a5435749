"""Bodies of Unleash Edge's upstream endpoints, named as Unleash's OpenAPI document names them:
`POST /edge/validate` (tokenStringListSchema in, validatedEdgeTokensSchema out) and
`POST /api/client/metrics/bulk` (bulkMetricsSchema)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from client_api.serializers import as_count, parse_started
from flagadmin.api.fields import (
    StrictCharField,
    StrictChoiceField,
    StrictDictField,
    StrictIntegerField,
    StrictListField,
    StrictNumberField,
    StrictSerializer,
)
from flagadmin.api.responses import Attrs, ResponseShape
from flagadmin.core.models import ApiToken

# --- POST /edge/validate -----------------------------------------------------------------------


@extend_schema_serializer(component_name="tokenStringListSchema")
class TokenStringListSchemaSerializer(StrictSerializer):
    """A list of Unleash tokens to validate against known tokens."""

    tokens = StrictListField(
        child=StrictCharField(allow_blank=True),
        help_text="Tokens that we want to get access information about.",
    )


@extend_schema_serializer(component_name="edgeTokenSchema")
class EdgeTokenSchemaSerializer(ResponseShape):
    token = serializers.CharField(source="sent", help_text="The token, as sent.")
    type = serializers.CharField(help_text="`client`, `admin`, or `frontend`.")
    projects = serializers.ListField(
        child=serializers.CharField(),
        source="project_list",
        help_text='Its projects; `["*"]` for every project.',
    )
    environment = serializers.CharField(help_text="Its environment; `*` for an admin token.")

    def get_attrs(self, items: Sequence[ApiToken]) -> Mapping[ApiToken, Attrs]:
        # `sent` (context): each token's secret as the caller sent it, by digest; a body never
        # carries a secret the caller did not send.
        sent: Mapping[str, str] = self.context["sent"]
        return {
            token: {
                "sent": sent[token.digest],
                "project_list": [p for p in token.project.split(",") if p] or ["*"],
            }
            for token in items
        }


@extend_schema_serializer(component_name="validatedEdgeTokensSchema")
class ValidatedEdgeTokensSchemaSerializer(serializers.Serializer):
    tokens = EdgeTokenSchemaSerializer(
        many=True, help_text="The valid ones of the tokens sent, in the order sent."
    )


# --- POST /api/client/metrics/bulk -------------------------------------------------------------

# Edge counts evaluations in unsigned 32-bit integers: a count never exceeds this.
MAX_BULK_COUNT = 2**32 - 1
# The columns' lengths (features.models.ClientInstance, FeatureUsageBucket).
MAX_NAME_LENGTH = 255
MAX_ENVIRONMENT_LENGTH = 100
SDK_TYPES = ("frontend", "backend")


@extend_schema_serializer(component_name="connectViaSchema")
class ConnectViaSchemaSerializer(StrictSerializer):
    appName = StrictCharField(allow_blank=True)
    instanceId = StrictCharField(allow_blank=True)


@extend_schema_serializer(component_name="bulkRegistrationSchema")
class BulkRegistrationSchemaSerializer(StrictSerializer):
    """An application registration, as an SDK posted it to Edge."""

    appName = StrictCharField(max_length=MAX_NAME_LENGTH, allow_blank=True)
    instanceId = StrictCharField(max_length=MAX_NAME_LENGTH, allow_blank=True)
    environment = StrictCharField(max_length=MAX_ENVIRONMENT_LENGTH, allow_blank=True)
    interval = StrictNumberField(required=False, allow_null=True, min_value=0)
    started = serializers.JSONField(
        required=False, help_text="An RFC 3339 date-time or Unix time; another value is unknown."
    )
    strategies = serializers.ListField(
        child=StrictCharField(allow_blank=True), required=False, allow_null=True
    )
    projects = serializers.ListField(
        child=StrictCharField(allow_blank=True), required=False, allow_null=True
    )
    sdkVersion = StrictCharField(
        max_length=MAX_NAME_LENGTH, allow_blank=True, required=False, allow_null=True
    )
    sdkType = StrictChoiceField(SDK_TYPES, required=False, allow_null=True)
    connectVia = serializers.ListField(
        child=ConnectViaSchemaSerializer(),
        required=False,
        allow_null=True,
        help_text="The Edge instances the registration came through.",
    )


@extend_schema_serializer(component_name="clientMetricsEnvSchema")
class ClientMetricsEnvSchemaSerializer(StrictSerializer):
    """How often one application evaluated one flag to on and off in one environment."""

    featureName = StrictCharField(allow_blank=True)
    appName = StrictCharField(max_length=MAX_NAME_LENGTH, allow_blank=True)
    environment = StrictCharField(allow_blank=True)
    timestamp = serializers.JSONField(required=False, help_text="Ignored: counted in this hour.")
    yes = StrictIntegerField(min_value=0, max_value=MAX_BULK_COUNT, required=False)
    no = StrictIntegerField(min_value=0, max_value=MAX_BULK_COUNT, required=False)
    variants = StrictDictField(
        child=StrictIntegerField(min_value=0, max_value=MAX_BULK_COUNT),
        required=False,
        allow_null=True,
    )


@extend_schema_serializer(component_name="bulkMetricsSchema")
class BulkMetricsSchemaSerializer(StrictSerializer):
    """A batch of registrations and usage metrics that Edge accumulated from its SDKs."""

    # No item limit but the body's size: a batch of Edge's fills up to 100 kB.
    applications = serializers.ListField(child=BulkRegistrationSchemaSerializer())
    metrics = serializers.ListField(child=ClientMetricsEnvSchemaSerializer())
    impactMetrics = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        allow_null=True,
        help_text="Accepted and ignored: flagadmin keeps no impact metrics.",
    )
    seenTokens = serializers.ListField(
        child=StrictCharField(allow_blank=True),
        required=False,
        allow_null=True,
        help_text="Tokens Edge saw its SDKs use: each one's last use is recorded.",
    )


@dataclass(frozen=True)
class ApplicationReport:
    """An SDK instance that registered through Edge."""

    app_name: str
    instance_id: str
    environment: str
    sdk_version: str
    strategies: tuple[str, ...]
    interval: int | None
    started_at: datetime | None


@dataclass
class BulkMetrics:
    applications: list[ApplicationReport] = field(default_factory=list)
    # app name -> flag -> (yes, no), summed over the batch, for one environment only.
    counts: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    seen_tokens: list[str] = field(default_factory=list)


Problems = dict[str, object]


def parse_bulk_metrics(data: object, *, environment: str) -> BulkMetrics:
    """What a `bulkMetricsSchema` body reports, checked as `BulkMetricsSchemaSerializer`
    documents it, errors in its shape (paths under /body). As Unleash does: applications and
    metrics without an `appName` are skipped, and only the metrics of `environment` (the
    token's) are counted. By hand rather than through the serializer: a batch of Edge's holds up
    to 100 kB of entries, which DRF's nested fields check ten times slower."""
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": ["must be object"]})
    errors: Problems = {}
    for name in ("applications", "metrics"):
        if name not in data:
            errors[name] = [serializers.ErrorDetail("required", code="required")]
        elif not isinstance(data[name], list):
            errors[name] = ["must be array"]
    for name in ("impactMetrics", "seenTokens"):
        if data.get(name) is not None and not isinstance(data[name], list):
            errors[name] = ["must be array"]
    if errors:
        raise serializers.ValidationError(errors)
    report = BulkMetrics()
    _parse_applications(data["applications"], report, errors)
    _parse_metrics(data["metrics"], environment, report, errors)
    seen = data.get("seenTokens") or []
    bad_tokens = {str(i): ["must be string"] for i, t in enumerate(seen) if not isinstance(t, str)}
    if bad_tokens:
        errors["seenTokens"] = bad_tokens
    if errors:
        raise serializers.ValidationError(errors)
    report.seen_tokens = [token for token in seen if token]
    return report


def _string(
    item: dict, name: str, problems: Problems, *, max_length: int | None = None, optional=False
) -> str | None:
    if name not in item or (optional and item[name] is None):
        if not optional:
            problems[name] = [serializers.ErrorDetail("required", code="required")]
        return None
    value = item[name]
    if not isinstance(value, str):
        problems[name] = ["must be string"]
        return None
    if max_length is not None and len(value) > max_length:
        problems[name] = [f"must NOT have more than {max_length} characters"]
        return None
    return value


def _strings(item: dict, name: str, problems: Problems) -> tuple[str, ...]:
    value = item.get(name)
    if value is None:
        return ()
    if not isinstance(value, list):
        problems[name] = ["must be array"]
        return ()
    wrong = {str(i): ["must be string"] for i, v in enumerate(value) if not isinstance(v, str)}
    if wrong:
        problems[name] = wrong
    return tuple(v for v in value if isinstance(v, str))


def _parse_applications(items: list, report: BulkMetrics, errors: Problems) -> None:
    problems_by_index: Problems = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            problems_by_index[str(index)] = ["must be object"]
            continue
        problems: Problems = {}
        app_name = _string(item, "appName", problems, max_length=MAX_NAME_LENGTH)
        instance_id = _string(item, "instanceId", problems, max_length=MAX_NAME_LENGTH)
        environment = _string(item, "environment", problems, max_length=MAX_ENVIRONMENT_LENGTH)
        sdk_version = _string(
            item, "sdkVersion", problems, max_length=MAX_NAME_LENGTH, optional=True
        )
        strategies = _strings(item, "strategies", problems)
        _strings(item, "projects", problems)
        interval = item.get("interval")
        if interval is not None and (
            isinstance(interval, bool) or not isinstance(interval, int | float) or interval < 0
        ):
            problems["interval"] = ["must be a number >= 0"]
        sdk_type = item.get("sdkType")
        if sdk_type is not None and sdk_type not in SDK_TYPES:
            problems["sdkType"] = [
                'must be equal to one of the allowed values: "frontend", "backend"'
            ]
        connect_via = item.get("connectVia")
        if connect_via is not None and not isinstance(connect_via, list):
            problems["connectVia"] = ["must be array"]
        if problems:
            problems_by_index[str(index)] = problems
            continue
        if not app_name:
            continue
        report.applications.append(
            ApplicationReport(
                app_name=app_name,
                instance_id=instance_id,
                environment=environment,
                sdk_version=sdk_version or "",
                strategies=strategies,
                interval=None if interval is None else int(min(interval, 2**63 - 1)),
                started_at=parse_started(item.get("started")),
            )
        )
    if problems_by_index:
        errors["applications"] = problems_by_index


def _count(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be integer"
    if value < 0:
        return "must be >= 0"
    return f"must be <= {MAX_BULK_COUNT}" if value > MAX_BULK_COUNT else None


def _parse_metrics(items: list, environment: str, report: BulkMetrics, errors: Problems) -> None:
    problems_by_index: Problems = {}
    counts: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            problems_by_index[str(index)] = ["must be object"]
            continue
        problems: Problems = {}
        flag = _string(item, "featureName", problems)
        app_name = _string(item, "appName", problems, max_length=MAX_NAME_LENGTH)
        metric_environment = _string(item, "environment", problems)
        given = {key: as_count(item[key]) for key in ("yes", "no") if item.get(key) is not None}
        for key, value in given.items():
            if problem := _count(value):
                problems[key] = [problem]
        variants = item.get("variants")
        if variants is not None:
            if not isinstance(variants, dict):
                problems["variants"] = ["must be object"]
            elif wrong := {
                name: [problem] for name, count in variants.items() if (problem := _count(count))
            }:
                problems["variants"] = wrong
        if problems:
            problems_by_index[str(index)] = problems
            continue
        if not app_name or metric_environment != environment:
            continue
        summed = counts[app_name].setdefault(flag, [0, 0])
        summed[0] += given.get("yes", 0)
        summed[1] += given.get("no", 0)
    if problems_by_index:
        errors["metrics"] = problems_by_index
    report.counts = {
        app: {flag: (yes, no) for flag, (yes, no) in flags.items()} for app, flags in counts.items()
    }
