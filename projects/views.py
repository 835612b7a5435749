"""The project endpoints of the admin API."""

from __future__ import annotations

import json
from urllib.parse import quote

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from flagadmin import permissions as perms
from flagadmin.api.errors import NotFoundError, ValidationError
from flagadmin.api.views import AdminApiMixin
from flagadmin.models import User
from flagadmin.names import URL_SAFE_CHARACTERS
from flagadmin.schema import error_responses
from projects.models import Project
from projects.queries import favorite_project_ids, project_access, project_detail, projects_page
from projects.serializers import (
    CreateProjectSchemaSerializer,
    ProjectAccessSchemaSerializer,
    ProjectAddAccessSchemaSerializer,
    ProjectDetailSchemaSerializer,
    ProjectsSchemaSerializer,
)
from projects.services import (
    add_project_access,
    archive_project,
    create_project,
    revive_project,
)

PROJECT_ID = OpenApiParameter("projectId", str, OpenApiParameter.PATH, description="Project id.")
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


def caller_user_id(request: Request) -> int | None:
    """The caller's user id (session or personal token); None for admin tokens."""
    return request.user.pk if isinstance(request.user, User) else None


def project_location(project_id: str) -> str:
    """The project's path. Ids are URL-friendly, so quoting changes nothing for them; it is
    there so that the header can never carry a character a URL does not allow."""
    return f"/api/admin/projects/{quote(project_id, safe=URL_SAFE_CHARACTERS)}"


def get_project_or_404(project_id: str) -> Project:
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        raise NotFoundError(f"Project with id {project_id} does not exist")
    return project


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
        page = projects_page(archived=archived_query(request))
        body = page.render(favorite_project_ids(caller_user_id(request)))
        # Already JSON: the list is encoded once per computation, not once per request.
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
            "`project-archived`; archiving an archived project changes nothing. Needs `ADMIN`."
        ),
        parameters=[PROJECT_ID],
        request=None,
        responses={200: ProjectDetailSchemaSerializer, **error_responses(404, 415)},
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
        return Response(project_access(project.pk))
