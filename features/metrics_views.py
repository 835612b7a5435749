"""What SDKs reported, read back as Unleash 8.2 answers it: the applications
(`GET /api/admin/metrics/applications` and `/:appName`, from the registered instances) and a
flag's usage (`GET /api/admin/client-metrics/features/:name` and `/raw`, from the hourly
buckets), beside the writes that store them (`metrics_services`); what they answer is read by
`metrics_selectors`. Mounted by `overview.urls`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from features.metrics_selectors import (
    Application,
    announced_by_instances,
    application_detail,
    feature_usage,
    list_applications,
    raw_metrics,
)
from flagadmin.api.errors import NotFoundError
from flagadmin.api.responses import Attrs, ResponseShape, serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.search import PageQuerySerializer, parse_query, search_terms
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

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
class ApplicationSchemaSerializer(ResponseShape):
    appName = serializers.CharField(source="app_name")
    createdAt = serializers.DateTimeField(
        source="created_at", help_text="When its first instance started or was seen."
    )
    updatedAt = serializers.DateTimeField(
        source="updated_at", help_text="When an instance was last seen."
    )
    description = serializers.CharField(allow_null=True, help_text="Not stored: null.")
    strategies = serializers.ListField(child=serializers.CharField())
    url = serializers.CharField(allow_null=True, help_text="Not stored: null.")
    color = serializers.CharField(allow_null=True, help_text="Not stored: null.")
    icon = serializers.CharField(allow_null=True, help_text="Not stored: null.")
    usage = ApplicationUsageSchemaSerializer(many=True)

    def get_attrs(self, items: Sequence[Application]) -> Mapping[Application, Attrs]:
        # The page's instances read once, whatever the number of applications.
        announced = announced_by_instances([app.app_name for app in items])
        attrs = {}
        for app in items:
            environments, strategies = announced[app.app_name]
            attrs[app] = {
                "strategies": strategies,
                # Instances do not record their project.
                "usage": [{"project": "*", "environments": environments}],
            }
        return attrs


@extend_schema_serializer(component_name="applicationsSchema")
class ApplicationsSchemaSerializer(serializers.Serializer):
    applications = ApplicationSchemaSerializer(many=True)
    total = serializers.IntegerField()


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
        applications, total = list_applications(
            terms=search_terms(data.get("query")),
            descending=data.get("sortOrder") == "desc",
            offset=data["offset"],
            limit=data["limit"],
        )
        body = serialize(applications, ApplicationSchemaSerializer)
        return Response({"applications": body, "total": total})


@extend_schema_serializer(component_name="applicationInstanceSchema")
class ApplicationInstanceSchemaSerializer(ResponseShape):
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
        body["instances"] = serialize(body["instances"], ApplicationInstanceSchemaSerializer)
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
