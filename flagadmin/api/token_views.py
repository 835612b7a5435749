"""Changing and deleting API tokens, and a project's own client and frontend tokens.

The path names a token by its whole secret, as in Unleash (`PUT /api/admin/api-tokens/:token`).
Only digests are stored, so the token is found by the digest of the path's value; the secret is
never logged, stored or answered back."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from flagadmin.api.errors import NotFoundError, ValidationError
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.serializers import (
    ApiTokenSchemaSerializer,
    ApiTokensSchemaSerializer,
    CreatedApiTokenSchemaSerializer,
)
from flagadmin.api.token_serializers import (
    CreateProjectApiTokenSchemaSerializer,
    UpdateApiTokenSchemaSerializer,
)
from flagadmin.api.views import AdminApiMixin, created_token
from flagadmin.core import permissions as perms
from flagadmin.core import services
from flagadmin.core.models import ApiToken
from flagadmin.core.tokens import SCOPED_TYPES

NO_BODY = OpenApiResponse(description="This response has no body.")
TOKEN_PARAMETER = OpenApiParameter(
    "token",
    str,
    OpenApiParameter.PATH,
    description="The token's whole secret, as shown when it was created.",
)
PROJECT_PARAMETER = OpenApiParameter(
    "projectId", str, OpenApiParameter.PATH, description="Id of the project."
)


class ApiTokenView(AdminApiMixin, APIView):
    """One admin, client or frontend token, named by its secret. An unknown secret is answered
    like a known one (200, nothing done), as Unleash answers it, so the path tells nothing
    about which secrets exist."""

    required_permission = perms.ADMIN

    @extend_schema(
        tags=["API tokens"],
        operation_id="updateApiToken",
        summary="Update API token",
        description="Gives the token a new expiry. An unknown token is answered 200 and "
        "nothing changes (as Unleash answers it).",
        parameters=[TOKEN_PARAMETER],
        request=UpdateApiTokenSchemaSerializer,
        responses={200: NO_BODY, **error_responses(400, 413, 415)},
    )
    def put(self, request: Request, token: str) -> Response:
        serializer = UpdateApiTokenSchemaSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        found = services.managed_token(token)
        if found is not None:
            services.update_api_token_expiry(
                actor=request.user, token=found, expires_at=serializer.validated_data["expiresAt"]
            )
        return Response(status=status.HTTP_200_OK)

    @extend_schema(
        tags=["API tokens"],
        operation_id="deleteApiToken",
        summary="Delete API token",
        description="Deletes the token: it is refused from the next request (SDKs polling the "
        "client API within `CLIENT_API_REUSE_SECONDS` of their last lookup at most that much "
        "later). An unknown token is answered 200 and nothing changes (as Unleash answers it).",
        parameters=[TOKEN_PARAMETER],
        responses={200: NO_BODY, **error_responses()},
    )
    def delete(self, request: Request, token: str) -> Response:
        found = services.managed_token(token)
        if found is not None:
            services.delete_api_token(actor=request.user, token=found)
        return Response(status=status.HTTP_200_OK)


def _project_exists_or_404(project_id: str) -> None:
    if services.unknown_projects([project_id]):
        raise NotFoundError("No project found")


def project_client_tokens(project_id: str) -> QuerySet[ApiToken]:
    """The client and frontend tokens that name `project_id` among their projects (not the `*`
    ones)."""
    return ApiToken.objects.filter(
        Q(project=project_id)
        | Q(project__startswith=f"{project_id},")
        | Q(project__endswith=f",{project_id}")
        | Q(project__contains=f",{project_id},"),
        type__in=SCOPED_TYPES,
        revoked_at__isnull=True,
    )


class ProjectApiTokensView(AdminApiMixin, APIView):
    """A project's client and frontend tokens: those that name the project (tokens for every
    project, `*`, and admin tokens are managed at /api/admin/api-tokens)."""

    project_url_kwarg = "projectId"

    @property
    def required_permission(self) -> str | None:
        by_method = {"GET": perms.READ_PROJECT_API_TOKEN, "POST": perms.CREATE_PROJECT_API_TOKEN}
        return by_method.get(self.request.method)

    @extend_schema(
        tags=["Projects"],
        operation_id="getProjectApiTokens",
        summary="Get api tokens for project.",
        description="The client and frontend tokens that name this project, oldest first. "
        "Secrets are never shown.",
        parameters=[PROJECT_PARAMETER],
        responses={
            200: OpenApiResponse(ApiTokensSchemaSerializer, description="The tokens."),
            **error_responses(404),
        },
    )
    def get(self, request: Request, projectId: str) -> Response:
        _project_exists_or_404(projectId)
        tokens = project_client_tokens(projectId).order_by("created_at", "id")
        return Response({"tokens": serialize(tokens, ApiTokenSchemaSerializer)})

    @extend_schema(
        tags=["Projects"],
        operation_id="createProjectApiToken",
        summary="Create a project API token.",
        description="A client token (for SDKs) or a frontend token (for browser and mobile "
        "apps on `/api/frontend`) that reaches this project in one environment. "
        "The response carries the token in `secret`: it is shown this once and only its "
        "digest is stored.",
        parameters=[PROJECT_PARAMETER],
        request=CreateProjectApiTokenSchemaSerializer,
        responses={
            201: OpenApiResponse(
                CreatedApiTokenSchemaSerializer, description="The token, with its secret."
            ),
            **error_responses(400, 404, 413, 415),
        },
    )
    def post(self, request: Request, projectId: str) -> Response:
        _project_exists_or_404(projectId)
        serializer = CreateProjectApiTokenSchemaSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return created_token(request, serializer.validated_data, [projectId])


class ProjectApiTokenView(AdminApiMixin, APIView):
    required_permission = perms.DELETE_PROJECT_API_TOKEN
    project_url_kwarg = "projectId"
    reads_no_body = True

    @extend_schema(
        tags=["Projects"],
        operation_id="deleteProjectApiToken",
        summary="Delete a project API token.",
        description="Deletes a client or frontend token of this project only, named by its "
        "secret. A token that names no other project is deleted (200); one that also reaches other "
        "projects is refused (400: delete it at /api/admin/api-tokens); any other secret, "
        "known or not, is 404.",
        parameters=[PROJECT_PARAMETER, TOKEN_PARAMETER],
        responses={200: NO_BODY, **error_responses(400, 404)},
    )
    def delete(self, request: Request, projectId: str, token: str) -> Response:
        found = project_client_tokens(projectId).filter(digest=ApiToken.digest_of(token)).first()
        if found is None:
            raise NotFoundError("No token found")
        if found.project != projectId:
            raise ValidationError(
                "This token reaches other projects too; delete it at /api/admin/api-tokens."
            )
        services.delete_api_token(actor=request.user, token=found)
        return Response(status=status.HTTP_200_OK)
