"""The shared base of every admin API view, and the views of the core itself."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from flagadmin.api.errors import (
    ContentTooLargeError,
    ContentTypeError,
    MethodNotAllowedError,
    NotFoundError,
    ServiceUnavailableError,
    json_error_response,
)
from flagadmin.api.permissions import HasRequiredPermission

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

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)  # authentication, permissions, throttles
        method = request.method.lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise MethodNotAllowedError(f"{request.method} is not allowed on this path.")
        if request.method in BODY_METHODS:
            length = request.META.get("CONTENT_LENGTH") or "0"
            if length.isdigit() and int(length) > settings.MAX_REQUEST_BODY_BYTES:
                raise ContentTooLargeError()
            content_type = request.META.get("CONTENT_TYPE", "")
            media_type = content_type.split(";", 1)[0].strip().lower()
            if media_type != "application/json":
                raise ContentTypeError(content_type or None)


class UnknownApiPathView(AdminApiMixin, APIView):
    """Anything under /api/ that no route matches: 401 first, then 404 for any method."""

    schema = None  # not part of the document

    def _not_found(self, request: Request, *args, **kwargs) -> Response:
        raise NotFoundError(f"The path you were looking for ({request.path}) is not available.")

    get = post = put = patch = delete = head = options = _not_found

    def initial(self, request: Request, *args, **kwargs) -> None:
        # Authentication and the admin-API check only: no content-type check on a path
        # that does not exist.
        APIView.initial(self, request, *args, **kwargs)


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
    from flagadmin.api.errors import InternalError

    return json_error_response(InternalError())
