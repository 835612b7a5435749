"""The project endpoints that answer with a project's figures (list, read, create, archive,
revive), beside the read model they use (`overview.project_figures`). The projects app keeps
the models, the writes and the access endpoint."""

from __future__ import annotations

import json
from urllib.parse import quote

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from flagadmin.api.errors import NotFoundError, ValidationError
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.names import URL_SAFE_CHARACTERS
from overview.project_figures import project_detail, projects_list_body
from projects.serializers import (
    CreateProjectSchemaSerializer,
    ProjectDetailSchemaSerializer,
    ProjectsSchemaSerializer,
)
from projects.services import archive_project, create_project, revive_project
from projects.views import PROJECT_ID, caller_user_id, get_project_or_404

ARCHIVED = OpenApiParameter(
    "archived",
    bool,
    OpenApiParameter.QUERY,
    required=False,
    description="`true`: only archived projects; `false` or absent: only active ones. Any "
    "other value is 400.",
)


def archived_query(request: Request) -> bool:
    """The `archived` query parameter: exactly `true` or `false`, once (absent: false)."""
    values = request.query_params.getlist("archived")
    if not values:
        return False
    if len(values) == 1 and values[0] in ("true", "false"):
        return values[0] == "true"
    sent = json.dumps(values[0] if len(values) == 1 else values, ensure_ascii=False)
    raise ValidationError.for_property(
        "/query/archived", f"The `/query/archived` property must be boolean. You sent {sent}."
    )


def project_location(project_id: str) -> str:
    """The project's path. Ids are URL-friendly, so quoting changes nothing for them; it is
    there so that the header can never carry a character a URL does not allow."""
    return f"/api/admin/projects/{quote(project_id, safe=URL_SAFE_CHARACTERS)}"


def detail_response(request: Request, project_id: str, code: int = status.HTTP_200_OK):
    body = project_detail(project_id, user_id=caller_user_id(request))
    if body is None:
        raise NotFoundError(f"Project with id {project_id} does not exist")
    return Response(body, status=code)


class ProjectViewSet(AdminApiMixin, viewsets.ViewSet):
    """List, read, create, archive and revive projects."""

    required_permissions = {
        "create": perms.CREATE_PROJECT,
        "archive": perms.ADMIN,
        "revive": perms.ADMIN,
    }

    @extend_schema(
        operation_id="getProjects",
        tags=["Projects"],
        summary="Get a list of all projects",
        description=(
            "The active projects (or, with `archived=true`, the archived ones) with figures "
            "computed when read: flag counts, health, members, owners, last update and last "
            "reported usage. Ordered by name case-insensitively (Unicode case folding), then "
            "id. Any admin-API principal may list (client tokens get 403). "
            "`avgTimeToProduction` (deprecated) is not computed and not sent."
        ),
        parameters=[ARCHIVED],
        responses={200: ProjectsSchemaSerializer, **error_responses(400)},
    )
    def list(self, request: Request) -> HttpResponse:
        body = projects_list_body(archived=archived_query(request), user_id=caller_user_id(request))
        # Encoded by the read model in one call, rather than field by field by a serializer.
        return HttpResponse(body, content_type="application/json")

    @extend_schema(
        operation_id="getProject",
        tags=["Projects"],
        summary="Get a project",
        description="One project, archived or not, as the list shows it, with the "
        "environments enabled in it. 404 for an unknown id.",
        parameters=[PROJECT_ID],
        responses={200: ProjectDetailSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, projectId: str) -> Response:
        return detail_response(request, projectId)

    @extend_schema(
        operation_id="createProject",
        tags=["Projects"],
        summary="Create a project",
        description=(
            "Creates a project with the listed environments enabled (every enabled environment "
            "when `environments` is absent) and records a `project-created` event. Needs "
            "`CREATE_PROJECT` (Admin, Editor). A signed-in user or a personal or "
            "service-account token becomes the project's Owner; with an admin token the "
            "project has no owner. 409 `NameExistsError` when the id is taken. Answers 201 "
            "with the project and `Location: /api/admin/projects/<id>`."
        ),
        request=CreateProjectSchemaSerializer,
        responses={
            201: OpenApiResponse(ProjectDetailSchemaSerializer, description="The new project."),
            **error_responses(400, 409, 413, 415),
        },
    )
    def create(self, request: Request) -> Response:
        body = CreateProjectSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        project = create_project(**body.validated_data, actor=request.user)
        response = detail_response(request, project.pk, status.HTTP_201_CREATED)
        response["Location"] = project_location(project.pk)
        return response

    @extend_schema(
        operation_id="archiveProject",
        tags=["Projects"],
        summary="Archive a project",
        description=(
            "Archives the project: it is then listed only with `archived=true`, with "
            "`archivedAt` set, and takes no new flags (404 on create). Records "
            "`project-archived`; archiving an archived project changes nothing. Refused "
            "(403 `InvalidOperationError`, as Unleash) while the project has active flags: "
            "archive or delete them first. Needs `ADMIN`."
        ),
        parameters=[PROJECT_ID],
        request=None,
        responses={200: ProjectDetailSchemaSerializer, **error_responses(403, 404, 415)},
    )
    def archive(self, request: Request, projectId: str) -> Response:
        archive_project(project=get_project_or_404(projectId), actor=request.user)
        return detail_response(request, projectId)

    @extend_schema(
        operation_id="reviveProject",
        tags=["Projects"],
        summary="Revive an archived project",
        description=(
            "Brings an archived project back to the active list and records "
            "`project-revived`; reviving an active project changes nothing. Needs `ADMIN`."
        ),
        parameters=[PROJECT_ID],
        request=None,
        responses={200: ProjectDetailSchemaSerializer, **error_responses(404, 415)},
    )
    def revive(self, request: Request, projectId: str) -> Response:
        revive_project(project=get_project_or_404(projectId), actor=request.user)
        return detail_response(request, projectId)
