"""The project endpoint that needs no flag figures (project access), and the helpers the
project endpoints share. Those that answer with a project's figures are in
`overview.project_views`, beside the read model of the figures."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from flagadmin.api.lookups import get_or_404
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.models import User
from projects.models import Project
from projects.serializers import ProjectAccessSchemaSerializer, ProjectAddAccessSchemaSerializer
from projects.services import PROJECT_NOT_FOUND, add_project_access

PROJECT_ID = OpenApiParameter("projectId", str, OpenApiParameter.PATH, description="Project id.")


def caller_user_id(request: Request) -> int | None:
    """The caller's user id (session or personal token); None for admin tokens."""
    return request.user.pk if isinstance(request.user, User) else None


def get_project_or_404(project_id: str) -> Project:
    """The project the URL names, archived or not."""
    return get_or_404(Project.objects.all(), PROJECT_NOT_FOUND.format(project_id), pk=project_id)


class ProjectAccessViewSet(AdminApiMixin, viewsets.ViewSet):
    """Give users and groups project roles."""

    required_permission = perms.UPDATE_PROJECT_ACCESS
    project_url_kwarg = "projectId"

    @extend_schema(
        operation_id="addAccessToProject",
        tags=["Projects"],
        summary="Give users and groups project roles",
        description=(
            "Gives every listed user and group every listed project role (Owner 4, Member 5, "
            "or a custom project role) in the project; assignments that exist are kept, so "
            "repeating a call changes nothing. A root role id, or an id of no role, user or "
            "group, is 400 naming it. Records `project-access-added`. Needs `ADMIN`, or the "
            "Owner role in the project (`UPDATE_PROJECT_ACCESS`). Answers 200 with every "
            "role assignment of the project."
        ),
        parameters=[PROJECT_ID],
        request=ProjectAddAccessSchemaSerializer,
        responses={200: ProjectAccessSchemaSerializer, **error_responses(400, 404, 413, 415)},
    )
    def create(self, request: Request, projectId: str) -> Response:
        body = ProjectAddAccessSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        project = get_project_or_404(projectId)
        add_project_access(
            project=project,
            role_ids=body.validated_data["roles"],
            user_ids=body.validated_data["users"],
            group_ids=body.validated_data["groups"],
            actor=request.user,
        )
        return Response(serialize(project, ProjectAccessSchemaSerializer))
