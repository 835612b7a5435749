"""What SDKs reported, read back as Unleash 8.2 answers it: the applications
(`GET /api/admin/metrics/applications` and `/:appName`, from the registered instances) and a
flag's usage (`GET /api/admin/client-metrics/features/:name` and `/raw`, from the hourly
buckets), beside the writes that store them (`metrics_services`). Mounted by `overview.urls`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Max, Min, QuerySet, Sum
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from definitions.models import StrategyDefinition
from definitions.services import strategy_as_dict
from features.models import ClientInstance, Feature, FeatureUsageBucket
from flagadmin.api.errors import NotFoundError
from flagadmin.api.schema import error_responses
from flagadmin.api.search import PageQuerySerializer, any_term, parse_query, search_terms
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

# Unleash's window for the applications that saw a flag and the flags an application saw.
SEEN_WITHIN = timedelta(hours=24)


def _hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


# --- applications ------------------------------------------------------------------------------


class ApplicationsQuerySerializer(PageQuerySerializer):
    max_limit = 1000
    default_limit = 1000

    query = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Comma-separated terms; applications whose name contains any of them.",
    )
    sortOrder = serializers.ChoiceField(
        ["asc", "desc"],
        required=False,
        error_messages={
            "invalid_choice": 'must be equal to one of the allowed values: "asc", "desc"'
        },
        help_text="By application name (default asc).",
    )


@extend_schema_serializer(component_name="applicationUsageSchema")
class ApplicationUsageSchemaSerializer(serializers.Serializer):
    project = serializers.CharField(help_text="`*`: instances do not record their project.")
    environments = serializers.ListField(child=serializers.CharField())


@extend_schema_serializer(component_name="applicationSchema")
class ApplicationSchemaSerializer(serializers.Serializer):
    appName = serializers.CharField()
    createdAt = serializers.DateTimeField(help_text="When its first instance started or was seen.")
    updatedAt = serializers.DateTimeField(help_text="When an instance was last seen.")
    description = serializers.CharField(allow_null=True, help_text="Not stored: null.")
    strategies = serializers.ListField(child=serializers.CharField())
    url = serializers.CharField(allow_null=True, help_text="Not stored: null.")
    color = serializers.CharField(allow_null=True, help_text="Not stored: null.")
    icon = serializers.CharField(allow_null=True, help_text="Not stored: null.")
    usage = ApplicationUsageSchemaSerializer(many=True)


@extend_schema_serializer(component_name="applicationsSchema")
class ApplicationsSchemaSerializer(serializers.Serializer):
    applications = ApplicationSchemaSerializer(many=True)
    total = serializers.IntegerField()


def _strategies(instances: QuerySet[ClientInstance]) -> list[str]:
    """The strategies the instances announced, in the order first announced."""
    found: dict[str, None] = {}
    for announced in instances.order_by("last_seen_at", "pk").values_list("strategies", flat=True):
        for name in announced or []:
            if isinstance(name, str):
                found.setdefault(name, None)
    return list(found)


def list_applications(data: dict[str, Any]) -> dict[str, Any]:
    instances = ClientInstance.objects.all()
    if terms := search_terms(data.get("query")):
        instances = instances.filter(any_term(["app_name"], terms))
    apps = (
        instances.order_by()
        .values("app_name")
        .annotate(
            created=Min("started_at"), first_seen=Min("last_seen_at"), updated=Max("last_seen_at")
        )
    )
    descending = data.get("sortOrder") == "desc"
    apps = apps.order_by("-app_name" if descending else "app_name")
    total = apps.count()
    page = list(apps[data["offset"] : data["offset"] + data["limit"]])
    rows = ClientInstance.objects.filter(app_name__in=[app["app_name"] for app in page])
    environments: dict[str, set[str]] = {}
    strategies: dict[str, dict[str, None]] = {}
    for name, environment, announced in rows.order_by("last_seen_at", "pk").values_list(
        "app_name", "environment", "strategies"
    ):
        environments.setdefault(name, set()).add(environment)
        for strategy in announced or []:
            if isinstance(strategy, str):
                strategies.setdefault(name, {}).setdefault(strategy, None)
    return {
        "applications": [
            {
                "appName": app["app_name"],
                "createdAt": app["created"] or app["first_seen"],
                "updatedAt": app["updated"],
                "description": None,
                "strategies": list(strategies.get(app["app_name"], {})),
                "url": None,
                "color": None,
                "icon": None,
                "usage": [{"project": "*", "environments": sorted(environments[app["app_name"]])}],
            }
            for app in page
        ],
        "total": total,
    }


class ApplicationsView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Metrics"],
        operation_id="getApplications",
        summary="Get all applications",
        description="The applications whose SDKs registered or reported metrics, by name, "
        "paged (`limit` 1 to 1000, default 1000). Where Unleash reads a bad `offset` or "
        "`limit` as its default, this is a 400 naming it.",
        parameters=[ApplicationsQuerySerializer],
        responses={200: ApplicationsSchemaSerializer, **error_responses(400)},
    )
    def get(self, request: Request) -> Response:
        data = parse_query(request.query_params, ApplicationsQuerySerializer)
        return Response(ApplicationsSchemaSerializer(list_applications(data)).data)


@extend_schema_serializer(component_name="applicationInstanceSchema")
class ApplicationInstanceSchemaSerializer(serializers.Serializer):
    appName = serializers.CharField(source="app_name")
    instanceId = serializers.CharField(source="instance_id")
    sdkVersion = serializers.CharField(source="sdk_version")
    lastSeen = serializers.DateTimeField(source="last_seen_at")
    createdAt = serializers.DateTimeField(source="started_at", allow_null=True)
    environment = serializers.CharField()


@extend_schema_serializer(component_name="applicationDetailSchema")
class ApplicationDetailSchemaSerializer(serializers.Serializer):
    appName = serializers.CharField()
    createdAt = serializers.DateTimeField()
    description = serializers.CharField(allow_null=True)
    url = serializers.CharField(allow_null=True)
    color = serializers.CharField(allow_null=True)
    icon = serializers.CharField(allow_null=True)
    strategies = serializers.ListField(
        child=serializers.DictField(),
        help_text="Each announced strategy's definition, or `{name, notFound: true}`.",
    )
    instances = ApplicationInstanceSchemaSerializer(many=True)
    seenToggles = serializers.ListField(
        child=serializers.DictField(),
        help_text="Flags it reported in the last 24 hours, or `{name, notFound: true}`.",
    )
    links = serializers.DictField()


def application_detail(app_name: str) -> dict[str, Any] | None:
    instances = ClientInstance.objects.filter(app_name=app_name)
    listed = list(instances.order_by("last_seen_at", "pk"))
    if not listed:
        return None
    names = _strategies(instances)
    definitions = {s.name: s for s in StrategyDefinition.objects.filter(name__in=names)}
    seen = list(
        FeatureUsageBucket.objects.filter(
            app_name=app_name, hour__gte=_hour(timezone.now() - SEEN_WITHIN)
        )
        .order_by("feature_name")
        .values_list("feature_name", flat=True)
        .distinct()
    )
    flags = {
        flag["name"]: flag
        for flag in Feature.objects.filter(name__in=seen).values(
            "name", "description", "type", "project", "stale", "created_at", "impression_data"
        )
    }
    started = [i.started_at for i in listed if i.started_at] or [listed[0].last_seen_at]
    return {
        "appName": app_name,
        "createdAt": min(started),
        "description": None,
        "url": None,
        "color": None,
        "icon": None,
        "strategies": [
            strategy_as_dict(definitions[name])
            if name in definitions
            else {"name": name, "notFound": True}
            for name in names
        ],
        "instances": ApplicationInstanceSchemaSerializer(listed, many=True).data,
        "seenToggles": [
            {
                "name": name,
                "description": flags[name]["description"],
                "type": flags[name]["type"],
                "project": flags[name]["project"],
                "stale": flags[name]["stale"],
                "createdAt": flags[name]["created_at"],
                "impressionData": flags[name]["impression_data"],
            }
            if name in flags
            else {"name": name, "notFound": True}
            for name in seen
        ],
        "links": {"self": f"/api/applications/{app_name}"},
    }


class ApplicationView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Metrics"],
        operation_id="getApplication",
        summary="Get application data",
        description="An application: the strategies its SDKs announced (with their definitions), "
        "its instances and the flags it reported in the last 24 hours. 404 for an application "
        "no SDK registered.",
        responses={200: ApplicationDetailSchemaSerializer, **error_responses(404)},
    )
    def get(self, request: Request, appName: str) -> Response:
        body = application_detail(appName)
        if body is None:
            raise NotFoundError(f"Could not find appName={appName}")
        return Response(body)


# --- a flag's usage ----------------------------------------------------------------------------


@extend_schema_serializer(component_name="featureUsageSchema")
class FeatureUsageSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    maturity = serializers.CharField()
    featureName = serializers.CharField()
    lastHourUsage = serializers.ListField(
        child=serializers.DictField(),
        help_text="Per environment: `{environment, timestamp, yes, no}` since an hour ago.",
    )
    seenApplications = serializers.ListField(
        child=serializers.CharField(), help_text="Applications that reported it, last 24 hours."
    )


def feature_usage(name: str) -> dict[str, Any]:
    now = timezone.now()
    buckets = FeatureUsageBucket.objects.filter(feature_name=name)
    last_hour: dict[str, dict[str, Any]] = {}
    for environment, hour, yes, no in (
        buckets.filter(hour__gte=now - timedelta(hours=1))
        .order_by("environment", "hour")
        .values_list("environment", "hour")
        .annotate(yes=Sum("yes"), no=Sum("no"))
    ):
        usage = last_hour.setdefault(
            environment, {"environment": environment, "timestamp": hour, "yes": 0, "no": 0}
        )
        usage["yes"] += yes
        usage["no"] += no
    seen = (
        buckets.filter(hour__gte=_hour(now - SEEN_WITHIN))
        .order_by("app_name")
        .values_list("app_name", flat=True)
        .distinct()
    )
    return {
        "version": 1,
        "maturity": "stable",
        "featureName": name,
        "lastHourUsage": list(last_hour.values()),
        "seenApplications": list(seen),
    }


class FeatureUsageView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Metrics"],
        operation_id="getFeatureUsageSummary",
        summary="Last hour of usage and a list of applications that have reported seeing this "
        "feature flag",
        description="Evaluations to on (`yes`) and off (`no`) reported since an hour ago, per "
        "environment, and the applications that reported the flag in the last 24 hours. A flag "
        "nobody reported has none (whether it exists or not, as in Unleash).",
        responses={200: FeatureUsageSchemaSerializer, **error_responses()},
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(feature_usage(name))


class RawMetricsQuerySerializer(serializers.Serializer):
    hoursBack = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=48,
        default=24,
        error_messages={
            "invalid": "must be a whole number of hours from 1 to 48",
            "min_value": "must be a whole number of hours from 1 to 48",
            "max_value": "must be a whole number of hours from 1 to 48",
        },
        help_text="Hours to read back, the current one included (default 24).",
    )


@extend_schema_serializer(component_name="featureMetricsSchema")
class FeatureMetricsSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    maturity = serializers.CharField()
    data = serializers.ListField(
        child=serializers.DictField(),
        help_text="`{timestamp, no, yes, appName, environment, featureName}` for each hour, "
        "environment and application that reported the flag (hours without a report count 0), "
        "oldest hour first.",
    )


def raw_metrics(name: str, hours_back: int) -> list[dict[str, Any]]:
    """Unleash's `getClientMetricsForToggle`: every hour of the window for each environment
    and application that reported the flag in it, zeros where they did not."""
    current = _hour(timezone.now())
    hours = [current - timedelta(hours=back) for back in range(hours_back)]
    counts: dict[tuple[str, str, datetime], tuple[int, int]] = {}
    for environment, app, hour, yes, no in FeatureUsageBucket.objects.filter(
        feature_name=name, hour__gte=current - timedelta(hours=hours_back)
    ).values_list("environment", "app_name", "hour", "yes", "no"):
        counts[(environment, app, hour)] = (yes, no)
    environments = sorted({key[0] for key in counts})
    apps = sorted({key[1] for key in counts})[:100]
    rows = []
    for environment in environments:
        for app in apps:
            for hour in hours:
                yes, no = counts.get((environment, app, hour), (0, 0))
                rows.append(
                    {
                        "timestamp": hour,
                        "no": no,
                        "yes": yes,
                        "appName": app,
                        "environment": environment,
                        "featureName": name,
                    }
                )
    return sorted(rows, key=lambda row: row["timestamp"])  # stable, as Unleash's sort


class RawFeatureMetricsView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Metrics"],
        operation_id="getRawFeatureMetrics",
        summary="Get feature metrics",
        description="The flag's usage hour by hour for the last `hoursBack` hours (default 24). "
        "Unleash reads a `hoursBack` out of 1 to 48 as 24; here it is a 400 naming it.",
        parameters=[RawMetricsQuerySerializer],
        responses={200: FeatureMetricsSchemaSerializer, **error_responses(400)},
    )
    def get(self, request: Request, name: str) -> Response:
        data = parse_query(request.query_params, RawMetricsQuerySerializer)
        return Response(
            {"version": 1, "maturity": "stable", "data": raw_metrics(name, data["hoursBack"])}
        )
