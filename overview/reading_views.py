"""A project's overview and its environments, as Unleash 8.2 reads them
(`GET /api/admin/projects/:projectId/overview`, `GET /api/admin/environments/project/:projectId`):
here because both count the project's flags, which `projects` does not read."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from features.models import Feature, FeatureEnvironment
from flagadmin.api.errors import NotFoundError
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.models import ApiToken, AuditEvent
from overview.environment_views import EnvironmentSchemaSerializer
from overview.project_figures import project_detail
from projects.models import Environment, ProjectEnvironment
from projects.views import PROJECT_ID, caller_user_id, get_project_or_404

# Unleash's windows for a project's trends: the last 30 days, and the 30 before them.
WINDOW = timedelta(days=30)


@extend_schema_serializer(component_name="environmentProjectSchema")
class EnvironmentProjectSchemaSerializer(EnvironmentSchemaSerializer):
    projectApiTokenCount = serializers.IntegerField(
        help_text="API tokens (not revoked) for this environment and the project or every project."
    )
    projectEnabledToggleCount = serializers.IntegerField(
        help_text="The project's flags on in this environment."
    )
    visible = serializers.BooleanField(help_text="The environment is enabled in the project.")


@extend_schema_serializer(component_name="environmentsProjectSchema")
class EnvironmentsProjectSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    environments = EnvironmentProjectSchemaSerializer(many=True)


def _count(rows, column: str) -> Coalesce:
    counted = rows.filter(**{column: OuterRef("name")}).order_by().values(column)
    counted = counted.annotate(total=Count("*")).values("total")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def project_environments(project_id: str) -> list[Environment]:
    """Every environment in Unleash's order (sort order, then creation), with the project's
    counts and whether the project has it: one statement."""
    tokens = ApiToken.objects.filter(revoked_at__isnull=True).filter(
        Q(project=project_id) | Q(project="*")
    )
    enabled = FeatureEnvironment.objects.filter(enabled=True, feature__project_id=project_id)
    return list(
        Environment.objects.order_by("sort_order", "created_at", "name").annotate(
            projectApiTokenCount=_count(tokens, "environment"),
            projectEnabledToggleCount=_count(enabled, "environment_id"),
            visible=Exists(
                ProjectEnvironment.objects.filter(project_id=project_id, environment=OuterRef("pk"))
            ),
        )
    )


class ProjectEnvironmentsView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Environments"],
        operation_id="getProjectEnvironments",
        summary="Get the environments available to a project",
        description="Every environment, `visible` where the project has it enabled, with the "
        "project's API tokens and flags on in each. 404 for an unknown project (Unleash answers "
        "200 with every environment invisible).",
        parameters=[PROJECT_ID],
        responses={200: EnvironmentsProjectSchemaSerializer, **error_responses(404)},
    )
    def get(self, request: Request, projectId: str) -> Response:
        get_project_or_404(projectId)
        environments = project_environments(projectId)
        body = serialize(environments, EnvironmentProjectSchemaSerializer)
        return Response({"version": 1, "environments": body})


@extend_schema_serializer(component_name="projectStatsSchema")
class ProjectStatsSchemaSerializer(serializers.Serializer):
    avgTimeToProdCurrentWindow = serializers.FloatField(
        help_text="Not computed (flagadmin keeps no time to production): always 0."
    )
    createdCurrentWindow = serializers.IntegerField(help_text="Flags created, last 30 days.")
    createdPastWindow = serializers.IntegerField(help_text="Flags created, 30 days before.")
    archivedCurrentWindow = serializers.IntegerField(help_text="Flags archived, last 30 days.")
    archivedPastWindow = serializers.IntegerField(help_text="Flags archived, 30 days before.")
    projectActivityCurrentWindow = serializers.IntegerField(help_text="Events, last 30 days.")
    projectActivityPastWindow = serializers.IntegerField(help_text="Events, 30 days before.")
    projectMembersAddedCurrentWindow = serializers.IntegerField(
        help_text="Not recorded per membership: always 0."
    )


@extend_schema_serializer(component_name="projectOverviewSchema")
class ProjectOverviewSchemaSerializer(serializers.Serializer):
    stats = ProjectStatsSchemaSerializer()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    mode = serializers.CharField()
    featureLimit = serializers.IntegerField(allow_null=True)
    featureNaming = serializers.DictField(help_text="Not built: every value null.")
    linkTemplates = serializers.ListField(child=serializers.DictField(), help_text="Always [].")
    defaultStickiness = serializers.CharField()
    health = serializers.IntegerField()
    technicalDebt = serializers.IntegerField(help_text="100 minus the health.")
    favorite = serializers.BooleanField()
    updatedAt = serializers.DateTimeField(allow_null=True)
    archivedAt = serializers.DateTimeField(allow_null=True, required=False)
    createdAt = serializers.DateTimeField()
    onboardingStatus = serializers.DictField(
        help_text="`onboarding-started` (no flag), `first-flag-created` with the first flag's "
        "name (no SDK has reported a flag of the project), else `onboarded`."
    )
    environments = serializers.ListField(child=serializers.DictField())
    featureTypeCounts = serializers.ListField(child=serializers.DictField())
    members = serializers.IntegerField()
    version = serializers.IntegerField()


def _windows(rows, column: str, now) -> tuple[int, int]:
    counts = rows.aggregate(
        current=Count("pk", filter=Q(**{f"{column}__gte": now - WINDOW})),
        past=Count(
            "pk",
            filter=Q(**{f"{column}__gte": now - 2 * WINDOW, f"{column}__lt": now - WINDOW}),
        ),
    )
    return counts["current"], counts["past"]


def _onboarding(flags) -> dict[str, Any]:
    first = flags.order_by("created_at", "name").values_list("name", flat=True).first()
    if first is None:
        return {"status": "onboarding-started"}
    if flags.filter(last_seen_at__isnull=False).exists():
        return {"status": "onboarded"}
    return {"status": "first-flag-created", "feature": first}


def project_overview(project_id: str, *, user_id: int | None) -> dict[str, Any] | None:
    project = project_detail(project_id, user_id=user_id)
    if project is None:
        return None
    now = timezone.now()
    flags = Feature.objects.filter(project_id=project_id)
    created = _windows(flags, "created_at", now)
    archived = _windows(flags, "archived_at", now)
    activity = _windows(AuditEvent.objects.filter(project=project_id), "created_at", now)
    type_counts = (
        flags.filter(archived_at__isnull=True)
        .order_by("type")
        .values("type")
        .annotate(count=Count("*"))
    )
    health = project["health"]
    return {
        "stats": {
            "avgTimeToProdCurrentWindow": 0,
            "createdCurrentWindow": created[0],
            "createdPastWindow": created[1],
            "archivedCurrentWindow": archived[0],
            "archivedPastWindow": archived[1],
            "projectActivityCurrentWindow": activity[0],
            "projectActivityPastWindow": activity[1],
            "projectMembersAddedCurrentWindow": 0,
        },
        "name": project["name"],
        "description": project["description"],
        "mode": project["mode"],
        "featureLimit": None,
        "featureNaming": {"pattern": None, "example": None, "description": None},
        "linkTemplates": [],
        "defaultStickiness": project["defaultStickiness"],
        "health": health,
        "technicalDebt": 100 - health,
        "favorite": project["favorite"],
        "updatedAt": project["updatedAt"],
        **({"archivedAt": project["archivedAt"]} if project["archivedAt"] else {}),
        "createdAt": project["createdAt"],
        "onboardingStatus": _onboarding(flags),
        "environments": [{"environment": name} for name in project["environments"]],
        "featureTypeCounts": [{"type": row["type"], "count": row["count"]} for row in type_counts],
        "members": project["memberCount"],
        "version": 1,
    }


class ProjectOverviewView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Projects"],
        operation_id="getProjectOverview",
        summary="Get an overview of a project.",
        description="The project's details, health, flag counts by type, members and trends over "
        "the last 30 days and the 30 before, computed when read (Unleash reads them from a "
        "table a job refreshes). 404 for an unknown project.",
        parameters=[PROJECT_ID],
        responses={200: ProjectOverviewSchemaSerializer, **error_responses(404)},
    )
    def get(self, request: Request, projectId: str) -> Response:
        get_project_or_404(projectId)
        body = project_overview(projectId, user_id=caller_user_id(request))
        if body is None:  # archived or deleted meanwhile
            raise NotFoundError(f"Could not find project with id: {projectId}")
        return Response(body)
