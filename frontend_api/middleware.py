"""CORS for /api/frontend, as Unleash 8.2 answers it (`cors-origin-middleware.ts` over the
`cors` package, options `origin`, `maxAge`, `exposedHeaders: 'ETag'`, `credentials: true`):

- every answer under `/api/frontend*` (errors included) says `Vary: Origin`,
  `Access-Control-Allow-Credentials: true`, `Access-Control-Expose-Headers: ETag` and
  `Access-Control-Allow-Origin`: `*` when the allowed origins are empty or hold `*`, else the
  request's `Origin` when it is one of them, and nothing otherwise;
- any `OPTIONS` there is a preflight, answered 204 before authentication, with the methods,
  the requested headers reflected, and `Access-Control-Max-Age`.

The allowed origins are `FRONTEND_API_ORIGINS` (`UNLEASH_FRONTEND_API_ORIGINS`).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

PATH_PREFIX = "/api/frontend"
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


class FrontendCorsMiddleware:
    """In MIDDLEWARE after the API path matching (so `/api//frontend` is this path too)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.origins = allowed_origins()
        self.max_age = str(settings.ACCESS_CONTROL_MAX_AGE)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(PATH_PREFIX):
            return self.get_response(request)
        if request.method == "OPTIONS":
            return self.preflight(request)
        response = self.get_response(request)
        patch_vary_headers(response, ("Origin",))
        self.allow_origin(request, response)
        response["Access-Control-Allow-Credentials"] = "true"
        response["Access-Control-Expose-Headers"] = "ETag"
        return response

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
