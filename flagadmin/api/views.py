"""The shared base of every admin API view, and the views of the core itself."""

from __future__ import annotations

import sys

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from flagadmin.api.errors import (
    ContentTooLargeError,
    ContentTypeError,
    LengthRequiredError,
    MethodNotAllowedError,
    NotFoundError,
    ServiceUnavailableError,
    TransferEncodingError,
    ValidationError,
    json_error_response,
)
from flagadmin.api.lookups import get_or_404, id_from_path
from flagadmin.api.permissions import HasRequiredPermission
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.serializers import (
    ApiTokenSchemaSerializer,
    ApiTokensSchemaSerializer,
    CreateApiTokenSchemaSerializer,
    CreatedApiTokenSchemaSerializer,
    CreatePatSchemaSerializer,
    CreateServiceAccountSchemaSerializer,
    PatSchemaSerializer,
    ServiceAccountSchemaSerializer,
)
from flagadmin.core import permissions as perms
from flagadmin.core import services
from flagadmin.core.db import is_database_unavailable
from flagadmin.core.models import AccountType, ApiToken, TokenType, User

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class AdminApiMixin:
    """Runs the contract's checks in its order: 401 -> 403 -> 405 -> 413 -> 415 -> (400 when the
    body is parsed by the view) -> the view's own 404/409.

    Views declare `required_permission` (or `required_permissions` per action) and, for
    project-scoped permissions, `project_url_kwarg`.
    """

    permission_classes = [HasRequiredPermission]
    required_permission: str | None = None
    required_permissions: dict[str, str] = {}
    project_url_kwarg: str | None = None
    # A view that reads no body takes any content type, none included, as Unleash's routes
    # marked `acceptAnyContentType` do (a bare `curl -X POST .../on` works against Unleash).
    reads_no_body = False

    def check_permissions(self, request: Request) -> None:
        # A NUL byte in a path parameter names nothing that can exist, and PostgreSQL would
        # fail on it (a 500) in the project-scoped permission check or the view's lookup.
        # Anonymous callers still get their 401 first (from the permission classes).
        authenticated = getattr(request.user, "is_authenticated", False)
        if authenticated and any("\x00" in str(value) for value in self.kwargs.values()):
            raise NotFoundError(f"The path you were looking for ({request.path}) is not available.")
        super().check_permissions(request)

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)  # authentication, permissions, throttles
        method = request.method.lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise MethodNotAllowedError(f"{request.method} is not allowed on this path.")
        for name, values in request.query_params.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                path = f"/query/{name}"
                raise ValidationError.for_property(
                    path, f"The `{path}` property must not contain the NUL character (\\u0000)."
                )
        if request.method in BODY_METHODS:
            length = request.META.get("CONTENT_LENGTH") or "0"
            if length.isdigit() and int(length) > settings.MAX_REQUEST_BODY_BYTES:
                raise ContentTooLargeError()
            if self.reads_no_body:
                return
            content_type = request.META.get("CONTENT_TYPE", "")
            media_type = content_type.split(";", 1)[0].strip().lower()
            if media_type != "application/json":
                raise ContentTypeError(content_type or None)
            transfer_encoding = request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
            codings = [coding.strip() for coding in transfer_encoding.split(",") if coding.strip()]
            if codings and codings != ["chunked"]:
                raise TransferEncodingError()
            if codings and request.META.get("CONTENT_LENGTH") in (None, "", "0"):
                # Django reads a body without a length as empty: refuse it rather than act on {}.
                raise LengthRequiredError()


class NoRouteMixin:
    """A path that no route matches: the API's own authentication and permission checks, then
    404 for any method, whatever the body (no content-type check on a path that does not
    exist). Comes first in the bases, before the API's view class."""

    schema = None  # not part of the document

    def _not_found(self, request: Request, *args, **kwargs) -> Response:
        raise NotFoundError(f"The path you were looking for ({request.path}) is not available.")

    get = post = put = patch = delete = head = options = _not_found

    def initial(self, request: Request, *args, **kwargs) -> None:
        APIView.initial(self, request, *args, **kwargs)


class UnknownApiPathView(NoRouteMixin, AdminApiMixin, APIView):
    """Anything under /api/ that no route matches: 401 first, then 404 for any method."""


class ApiTokensView(AdminApiMixin, APIView):
    """Admin, client and frontend API tokens. Secrets are shown once, when a token is
    created."""

    required_permission = perms.ADMIN

    @extend_schema(
        tags=["API tokens"],
        operation_id="getAllApiTokens",
        summary="List API tokens",
        description="Every admin, client and frontend token that is not revoked, oldest first. "
        "Secrets and digests are never shown.",
        responses={
            200: OpenApiResponse(ApiTokensSchemaSerializer, description="The tokens."),
            **error_responses(),
        },
    )
    def get(self, request: Request) -> Response:
        tokens = ApiToken.objects.filter(
            type__in=[TokenType.ADMIN, TokenType.CLIENT, TokenType.FRONTEND],
            revoked_at__isnull=True,
        ).order_by("created_at", "id")
        return Response({"tokens": serialize(tokens, ApiTokenSchemaSerializer)})

    @extend_schema(
        tags=["API tokens"],
        operation_id="createApiToken",
        summary="Create an API token",
        description="Creates an admin token (acts as an administrator), a client token (for "
        "SDKs) or a frontend token (for browser and mobile apps on `/api/frontend`); client "
        "and frontend tokens are refused on this admin API. The response carries the token in "
        "`secret`: it is shown this once and only its digest is stored.",
        request=CreateApiTokenSchemaSerializer,
        responses={
            201: OpenApiResponse(
                CreatedApiTokenSchemaSerializer, description="The token, with its secret."
            ),
            **error_responses(400, 413, 415),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = CreateApiTokenSchemaSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        return created_token(request, data, data["projects"])


def created_token(request: Request, data: dict, projects: list[str]) -> Response:
    """The 201 of a token for `projects` created from a create body's `data` (createApiToken's
    or a project's): the token with its secret, shown this once."""
    token, plaintext = services.create_api_token(
        actor=request.user,
        name=data["tokenName"],
        token_type=data["type"],
        projects=projects,
        environment=data["environment"],
        expires_at=data.get("expiresAt"),
    )
    body = serialize(token, CreatedApiTokenSchemaSerializer, secret=plaintext)
    return Response(body, status=status.HTTP_201_CREATED)


class ServiceAccountsView(AdminApiMixin, APIView):
    """Service accounts: users that cannot sign in and act through personal tokens."""

    required_permission = perms.ADMIN

    @extend_schema(
        tags=["Service Accounts"],
        operation_id="createServiceAccount",
        summary="Create a service account",
        description="A user with account type `Service Account` that cannot sign in; its "
        "tokens (see `createServiceAccountToken`) act with its root role.",
        request=CreateServiceAccountSchemaSerializer,
        responses={
            201: OpenApiResponse(
                ServiceAccountSchemaSerializer, description="The service account."
            ),
            **error_responses(400, 409, 413, 415),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = CreateServiceAccountSchemaSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        account = services.create_service_account(
            actor=request.user,
            username=data["username"],
            name=data["name"],
            root_role=data["rootRole"],
        )
        body = serialize(account, ServiceAccountSchemaSerializer)
        return Response(body, status=status.HTTP_201_CREATED)


def get_service_account_or_404(account_id: int) -> User:
    return get_or_404(
        User.objects.filter(account_type=AccountType.SERVICE),
        "No service account found",
        pk=id_from_path(account_id),
    )


class ServiceAccountTokensView(AdminApiMixin, APIView):
    """Personal access tokens of a service account."""

    required_permission = perms.ADMIN

    @extend_schema(
        tags=["Service Accounts"],
        operation_id="createServiceAccountToken",
        summary="Create a token for a service account",
        description="The token acts with the service account's root role. The response "
        "carries it in `secret`: it is shown this once and only its digest is stored.",
        parameters=[
            OpenApiParameter(
                "id", int, OpenApiParameter.PATH, description="Id of the service account."
            )
        ],
        request=CreatePatSchemaSerializer,
        responses={
            201: OpenApiResponse(PatSchemaSerializer, description="The token, with its secret."),
            **error_responses(400, 404, 413, 415),
        },
    )
    def post(self, request: Request, id: int) -> Response:
        serializer = CreatePatSchemaSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account = get_service_account_or_404(id)
        token, plaintext = services.create_service_account_token(
            actor=request.user,
            account=account,
            description=serializer.validated_data["description"],
            expires_at=serializer.validated_data.get("expiresAt"),
        )
        body = serialize(token, PatSchemaSerializer, secret=plaintext)
        return Response(body, status=status.HTTP_201_CREATED)


@extend_schema(exclude=True)
class HealthView(APIView):
    """Liveness, as Unleash's `/health`: no authentication, no database."""

    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request: Request) -> Response:
        return Response({"health": "GOOD"})


@extend_schema(exclude=True)
class ReadyView(APIView):
    """Readiness: 200 when the database answers, else 503 with the error body."""

    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request: Request) -> Response:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.fetchone()
        except Exception as exc:
            raise ServiceUnavailableError("The database is unreachable.") from exc
        return Response({"health": "READY"})


def not_found_handler(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """handler404 for paths outside /api/ (the API's own unknown paths never get here)."""
    return json_error_response(
        NotFoundError(f"The path you were looking for ({request.path}) is not available.")
    )


def server_error_handler(request: HttpRequest) -> JsonResponse:
    """handler500: an exception outside DRF's views (middleware, the Django admin, SAML).
    Django calls it while handling the exception, so `sys.exception()` is that exception."""
    from flagadmin.api.errors import InternalError

    exc = sys.exception()
    if exc is not None and is_database_unavailable(exc):
        return json_error_response(ServiceUnavailableError(), cause=exc)
    return json_error_response(InternalError())
