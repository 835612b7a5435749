"""Read-only answers SDK tooling and scripts ask for: the flag types with their lifetimes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from features.models import FeatureType
from flagadmin.api.responses import Attrs, ResponseShape, serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

# Unleash's descriptions, in its order (it also lists `sunset`, which flagadmin has not).
_DESCRIPTIONS = {
    FeatureType.RELEASE: "Roll out new or incomplete features. Expected lifetime ~40 days",
    FeatureType.EXPERIMENT: "A/B and multivariate testing. Expected lifetime ~40 days",
    FeatureType.OPERATIONAL: "Transition between technical implementations with minimal risk. "
    "Expected lifetime: ~7 days",
    FeatureType.KILL_SWITCH: "Quickly disable certain functionalities or features. "
    "Expected lifetime: permanent",
    FeatureType.PERMISSION: "Control feature access based on user roles or entitlements. "
    "Expected lifetime: permanent",
}


@extend_schema_serializer(component_name="featureTypeSchema")
class FeatureTypeSchemaSerializer(ResponseShape):
    id = serializers.CharField(source="value")
    name = serializers.CharField(source="label")
    description = serializers.CharField()
    lifetimeDays = serializers.IntegerField(
        allow_null=True,
        min_value=0,
        help_text="Days after which a flag of this type that is not stale is potentially "
        "stale; null: never.",
    )

    def get_attrs(self, items: Sequence[FeatureType]) -> Mapping[FeatureType, Attrs]:
        attrs = {}
        for feature_type in items:
            lifetime = feature_type.expected_lifetime
            attrs[feature_type] = {
                "description": _DESCRIPTIONS[feature_type],
                "lifetimeDays": lifetime.days if lifetime is not None else None,
            }
        return attrs


@extend_schema_serializer(component_name="featureTypesSchema")
class FeatureTypesSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    types = FeatureTypeSchemaSerializer(many=True)


class FeatureTypesView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Feature Types"],
        operation_id="getAllFeatureTypes",
        summary="Get all feature types",
        description="The flag types, with their descriptions and expected lifetimes.",
        responses={
            200: OpenApiResponse(FeatureTypesSchemaSerializer, description="The types."),
            **error_responses(),
        },
    )
    def get(self, request: Request) -> Response:
        types = serialize(list(_DESCRIPTIONS), FeatureTypeSchemaSerializer)
        return Response({"version": 1, "types": types})
