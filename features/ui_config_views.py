"""`GET /api/admin/ui-config`: what this server is, for tools written against Unleash."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from features.limits import resource_limits
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

# The Unleash version whose admin and client APIs flagadmin answers as. Tools written for
# Unleash (its CLI, Terraform provider, SDK tooling) read `version`/`versionInfo` to decide
# what they may call, so they get the API level, not flagadmin's own package version.
UNLEASH_COMPATIBLE_VERSION = "8.2.0"

# Unleash's defaults for the limits flagadmin does not enforce (enterprise features it has not,
# and counts it leaves unbounded): a tool that checks against them stays within what both
# servers accept.
_UNENFORCED_LIMITS = {
    "signalEndpoints": 5,
    "actionSetActions": 10,
    "actionSetsPerProject": 5,
    "actionSetFilters": 5,
    "actionSetFilterValues": 25,
    "signalTokensPerEndpoint": 5,
    "environments": 50,
    "projects": 500,
    "apiTokens": 2000,
    "featureFlags": 5000,
    "releaseTemplates": 10,
}


@extend_schema_serializer(component_name="versionSchema")
class VersionSchemaSerializer(serializers.Serializer):
    current = serializers.DictField(child=serializers.CharField())
    latest = serializers.DictField(child=serializers.CharField())
    isLatest = serializers.BooleanField()


@extend_schema_serializer(component_name="resourceLimitsSchema")
class ResourceLimitsSchemaSerializer(serializers.Serializer):
    segmentValues = serializers.IntegerField()
    strategySegments = serializers.IntegerField()
    signalEndpoints = serializers.IntegerField()
    actionSetActions = serializers.IntegerField()
    actionSetsPerProject = serializers.IntegerField()
    actionSetFilters = serializers.IntegerField()
    actionSetFilterValues = serializers.IntegerField()
    signalTokensPerEndpoint = serializers.IntegerField()
    featureEnvironmentStrategies = serializers.IntegerField()
    constraintValues = serializers.IntegerField()
    constraints = serializers.IntegerField()
    environments = serializers.IntegerField()
    projects = serializers.IntegerField()
    apiTokens = serializers.IntegerField()
    segments = serializers.IntegerField()
    featureFlags = serializers.IntegerField()
    releaseTemplates = serializers.IntegerField()


@extend_schema_serializer(component_name="uiConfigSchema")
class UiConfigSchemaSerializer(serializers.Serializer):
    environment = serializers.CharField()
    flags = serializers.DictField(child=serializers.BooleanField())
    version = serializers.CharField(help_text="The Unleash version whose API this server answers.")
    unleashUrl = serializers.CharField()
    baseUriPath = serializers.CharField()
    authenticationType = serializers.CharField()
    versionInfo = VersionSchemaSerializer()
    resourceLimits = ResourceLimitsSchemaSerializer()
    disablePasswordAuth = serializers.BooleanField()
    maintenanceMode = serializers.BooleanField()


def ui_config() -> dict:
    limits = resource_limits()
    enforced = {
        "segmentValues": limits.segment_values,
        "strategySegments": limits.strategy_segments,
        "featureEnvironmentStrategies": limits.feature_environment_strategies,
        "constraintValues": limits.constraint_values,
        "constraints": limits.constraints,
        "segments": limits.segments,
    }
    base_url = settings.PUBLIC_BASE_URL
    return {
        "environment": "Open Source",
        "flags": {},
        "version": UNLEASH_COMPATIBLE_VERSION,
        "unleashUrl": base_url,
        "baseUriPath": urlsplit(base_url).path,
        # Operators sign in through the Django admin or SAML, never Unleash's password form.
        "authenticationType": "custom",
        "versionInfo": {
            "current": {"oss": UNLEASH_COMPATIBLE_VERSION, "enterprise": ""},
            "latest": {},
            "isLatest": True,
        },
        # In Unleash's key order.
        "resourceLimits": {
            key: enforced.get(key, _UNENFORCED_LIMITS.get(key))
            for key in ResourceLimitsSchemaSerializer().fields
        },
        "disablePasswordAuth": True,
        "maintenanceMode": False,
    }


class UiConfigView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Admin UI"],
        operation_id="getUiConfig",
        summary="Get UI configuration",
        description="What this server is, for tools written against Unleash: `version` and "
        "`versionInfo` give the Unleash version whose API flagadmin answers (8.2.0), not "
        "flagadmin's own; `unleashUrl` and `baseUriPath` come from `PUBLIC_BASE_URL`; "
        "`authenticationType` is `custom` (the Django admin and SAML, no password sign-in); "
        "`resourceLimits` has every key Unleash has, flagadmin's limits where it enforces one "
        "and Unleash's defaults elsewhere. Unleash's experimental `flags` are left out (none "
        "applies), as are the fields only its web UI reads: `frontendApiOrigins`, "
        "`emailEnabled`, `prometheusAPIAvailable`, `impactMetrics`, `maxSessionsCount`, "
        "`unleashContext`, `storiesPageEnabled` and `versionInfo.instanceId`.",
        responses={200: OpenApiResponse(UiConfigSchemaSerializer), **error_responses()},
    )
    def get(self, request: Request) -> Response:
        return Response(ui_config())
