"""CORS for /api/frontend, and its flags answered from the worker's memory.

CORS as Unleash 8.2 answers it (`cors-origin-middleware.ts` over the
`cors` package, options `origin`, `maxAge`, `exposedHeaders: 'ETag'`, `credentials: true`):

- every answer under `/api/frontend*` (errors included) says `Vary: Origin`,
  `Access-Control-Allow-Credentials: true`, `Access-Control-Expose-Headers: ETag` and
  `Access-Control-Allow-Origin`: `*` when the allowed origins are empty or hold `*`, else the
  request's `Origin` when it is one of them, and nothing otherwise;
- any `OPTIONS` there is a preflight, answered 204 before authentication, with the methods,
  the requested headers reflected, and `Access-Control-Max-Age`.

The allowed origins are `FRONTEND_API_ORIGINS` (`UNLEASH_FRONTEND_API_ORIGINS`).

A browser asks `GET` or `POST /api/frontend` on every page. When the worker looked its token up
lately (`authentication.remembered_frontend`) the request needs nothing of Django's session,
CSRF, auth and messages middleware nor of DRF's dispatch: it is answered here, with the headers
the whole stack would give it, from the engine (no query while the state is current). Anything
else (no token or an unknown one, a body or query to refuse, another content type) goes on to
the view, which answers as it always does. Figures: docs/frontend-api.md.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import orjson
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from rest_framework.exceptions import APIException

from client_api.middleware import stack_headers
from flagadmin.core.tokens import token_from_header
from frontend_api.answers import answer_response, kept_answer, toggles_response
from frontend_api.authentication import remembered_frontend
from frontend_api.context import context_from_body, context_from_query, query_items

PATH_PREFIX = "/api/frontend"
FLAGS_PATH = "/api/frontend"
# DRF's Allow of the flags' view (its handlers, and HEAD, which Django gives every GET view).
FLAGS_ALLOW = "GET, POST, HEAD, OPTIONS"
ALLOWED_METHODS = "GET,HEAD,PUT,PATCH,POST,DELETE"
DEFAULT_PORTS = {"http": 80, "https": 443}


def is_valid_origin(origin: str) -> bool:
    """Unleash's `validateOrigin`: `*`, or a URL that is exactly its own origin
    (`https://app.example.com`, no path, no trailing slash, no default port)."""
    if origin == "*":
        return True
    if "*" in origin:
        return False
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return False
    if parts.username or parts.password or parts.query or parts.fragment:
        return False
    if port is not None and port == DEFAULT_PORTS[parts.scheme]:
        return False
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    normal = f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
    return origin == normal


def allowed_origins() -> tuple[str, ...] | None:
    """The configured origins; None when any origin is allowed (`*`)."""
    origins = tuple(settings.FRONTEND_API_ORIGINS)
    invalid = [origin for origin in origins if not is_valid_origin(origin)]
    if invalid:
        raise ImproperlyConfigured(f"UNLEASH_FRONTEND_API_ORIGINS: Invalid origin: {invalid[0]}")
    return None if not origins or "*" in origins else origins


class FrontendApiMiddleware:
    """In MIDDLEWARE after the API path matching (so `/api//frontend` is this path too), before
    everything else."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.origins = allowed_origins()
        self.max_age = str(settings.ACCESS_CONTROL_MAX_AGE)
        self.headers = {**stack_headers(), "Allow": FLAGS_ALLOW}

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(PATH_PREFIX):
            return self.get_response(request)
        if request.method == "OPTIONS":
            return self.preflight(request)
        response = None
        if request.path_info == FLAGS_PATH and request.method in ("GET", "POST"):
            response = self.from_memory(request)
        if response is None:
            response = self.get_response(request)
        return self.with_cors(request, response)

    def with_cors(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        patch_vary_headers(response, ("Origin",))
        self.allow_origin(request, response)
        response["Access-Control-Allow-Credentials"] = "true"
        response["Access-Control-Expose-Headers"] = "ETag"
        return response

    def answer_from_memory(self, request: HttpRequest) -> HttpResponse | None:
        """The flags' answer from memory with every header this middleware gives it, or None
        (`flagadmin.serving.answered_from_memory`, for `GET /api/frontend`)."""
        response = self.from_memory(request)
        return None if response is None else self.with_cors(request, response)

    def from_memory(self, request: HttpRequest) -> HttpResponse | None:
        header = request.META.get("HTTP_AUTHORIZATION")
        principal = remembered_frontend(token_from_header(header)) if header else None
        if principal is None:
            return None
        try:
            if request.method == "GET":
                request_key = (
                    request.META.get("QUERY_STRING", ""),
                    request.META.get("REMOTE_ADDR"),
                )
                kept = kept_answer(
                    environment=principal.environment,
                    projects=principal.projects,
                    revision=principal.revision,
                    request_key=request_key,
                )
                if kept is not None:
                    return self.finished(answer_response(request, *kept))
                given = context_from_query(query_items(request.GET))
            else:
                request_key = None
                given = self.posted_context(request)
                if given is None:
                    return None
        except APIException:
            return None  # the view refuses it, with the error body
        return self.finished(toggles_response(request, principal, given, request_key))

    def finished(self, response: HttpResponse) -> HttpResponse:
        """`response` with the headers the rest of the stack would have given it."""
        response["Content-Length"] = str(len(response.content))
        for name, value in self.headers.items():
            response[name] = value
        return response

    @staticmethod
    def posted_context(request: HttpRequest) -> dict | None:
        """The body's context, or None for anything the view must look at (another content
        type, a body too large, JSON that does not parse)."""
        content_type = request.META.get("CONTENT_TYPE", "")
        if content_type.split(";", 1)[0].strip().lower() != "application/json":
            return None
        length = request.META.get("CONTENT_LENGTH") or ""
        if not length.isdigit() or int(length) > settings.MAX_REQUEST_BODY_BYTES:
            return None
        try:
            data = orjson.loads(request.body) if int(length) else {}
        except orjson.JSONDecodeError:
            return None
        return context_from_body(data)

    def allow_origin(self, request: HttpRequest, response: HttpResponse) -> None:
        if self.origins is None:
            response["Access-Control-Allow-Origin"] = "*"
            return
        origin = request.META.get("HTTP_ORIGIN")
        if origin in self.origins:
            response["Access-Control-Allow-Origin"] = origin

    def preflight(self, request: HttpRequest) -> HttpResponse:
        response = HttpResponse(status=204)
        patch_vary_headers(response, ("Origin",))
        self.allow_origin(request, response)
        response["Access-Control-Allow-Credentials"] = "true"
        response["Access-Control-Allow-Methods"] = ALLOWED_METHODS
        patch_vary_headers(response, ("Access-Control-Request-Headers",))
        requested = request.META.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS")
        if requested:
            response["Access-Control-Allow-Headers"] = requested
        response["Access-Control-Max-Age"] = self.max_age
        response["Access-Control-Expose-Headers"] = "ETag"
        response["Content-Length"] = "0"
        return response


def memory_answerer() -> Callable[[HttpRequest], HttpResponse | None]:
    """What `ANSWERED_FROM_MEMORY` names for `/api/frontend`: this middleware's answer from
    memory, configured as the middleware is."""
    return FrontendApiMiddleware(_not_reached).answer_from_memory


def _not_reached(request: HttpRequest) -> HttpResponse:
    raise AssertionError("answer_from_memory never passes a request on")
