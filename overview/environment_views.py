"""GET /api/admin/environments and /api/admin/environments/:name (Unleash's getAllEnvironments
and getEnvironment). Here rather than in `projects`, which owns environments, because the list
counts the flags turned on in each (`features`), and `projects` does not read flags."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from features.models import FeatureEnvironment
from flagadmin.api.errors import NotFoundError
from flagadmin.api.responses import ResponseShape, serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.models import ApiToken
from projects.models import Environment, ProjectEnvironment


@extend_schema_serializer(component_name="environmentSchema")
class EnvironmentSchemaSerializer(ResponseShape):
    name = serializers.CharField()
    type = serializers.CharField()
    sortOrder = serializers.IntegerField(source="sort_order")
    enabled = serializers.BooleanField()
    protected = serializers.SerializerMethodField(help_text="Always false here.")
    requiredApprovals = serializers.SerializerMethodField(
        help_text="Change requests are not built: always null."
    )

    def get_protected(self, environment: Environment) -> bool:
        return False

    def get_requiredApprovals(self, environment: Environment) -> int | None:
        return None


@extend_schema_serializer(component_name="environmentWithCountsSchema")
class EnvironmentWithCountsSchemaSerializer(EnvironmentSchemaSerializer):
    projectCount = serializers.IntegerField(help_text="Projects that have the environment.")
    apiTokenCount = serializers.IntegerField(help_text="API tokens (not revoked) bound to it.")
    enabledToggleCount = serializers.IntegerField(help_text="Flags turned on in it.")


@extend_schema_serializer(component_name="environmentsSchema")
class EnvironmentsSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    environments = EnvironmentWithCountsSchemaSerializer(many=True)


def _count(rows: QuerySet, column: str) -> Coalesce:
    """A correlated count of `rows` whose `column` names the environment: one statement for
    the whole list."""
    counted = (
        rows.filter(**{column: OuterRef("name")})
        .order_by()
        .values(column)
        .annotate(total=Count("*"))
        .values("total")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def environments_with_counts() -> QuerySet[Environment]:
    """Every environment in Unleash's order, with the counts its list shows (as Unleash counts
    them: archived projects' and flags' rows included)."""
    return Environment.objects.order_by("sort_order", "created_at", "name").annotate(
        projectCount=_count(ProjectEnvironment.objects.all(), "environment_id"),
        apiTokenCount=_count(ApiToken.objects.filter(revoked_at__isnull=True), "environment"),
        enabledToggleCount=_count(
            FeatureEnvironment.objects.filter(enabled=True), "environment_id"
        ),
    )


class EnvironmentsView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        operation_id="getAllEnvironments",
        tags=["Environments"],
        summary="Get all environments",
        description=(
            "Every environment, in sort order, with how many projects have it, how many API "
            "tokens are bound to it and how many flags are on in it. Any admin-API principal "
            "may read."
        ),
        responses={200: OpenApiResponse(EnvironmentsSchemaSerializer), **error_responses()},
    )
    def get(self, request: Request) -> Response:
        environments = serialize(environments_with_counts(), EnvironmentWithCountsSchemaSerializer)
        return Response({"version": 1, "environments": environments})


class EnvironmentView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        operation_id="getEnvironment",
        tags=["Environments"],
        summary="Get the environment with `name`",
        parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH)],
        responses={200: EnvironmentSchemaSerializer, **error_responses(404)},
    )
    def get(self, request: Request, name: str) -> Response:
        environment = Environment.objects.filter(pk=name).first()
        if environment is None:
            raise NotFoundError(f"Could not find environment with name: {name}")
        return Response(serialize(environment, EnvironmentSchemaSerializer))
