"""The Host header, checked once before anything else reads it; API paths as Unleash matches
them.

Django raises DisallowedHost wherever `request.get_host()` is first called (CommonMiddleware),
answers with an HTML "Bad Request (400)" and logs a whole traceback at ERROR. Here instead:
the liveness and readiness probes answer whatever the Host (load balancers and Kubernetes probe
by IP address), paths under /api/ get the contract's error body, other paths a plain 400, and
each refusal is one warning line.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from flagadmin.api.errors import ValidationError, error_body
from flagadmin.api.views import HealthView, ReadyView

logger = logging.getLogger("flagadmin.hosts")

# A Host header can be kilobytes long; the log and the body show its start only.
SHOWN_HOST_LIMIT = 100
HOST_PATH = "/headers/host"


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_HOST_LIMIT else text[:SHOWN_HOST_LIMIT] + "…"


def _is_api_path(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


class HostHeaderMiddleware:
    """First in MIDDLEWARE: validates the Host header (ALLOWED_HOSTS) for every request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.probes = {"/health": HealthView.as_view(), "/ready": ReadyView.as_view()}

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            request.get_host()
        except DisallowedHost:
            probe = self.probes.get(request.path_info)
            if probe is not None:
                # The probes need no session, CSRF or host: served here, past the middleware
                # that would read the Host header again.
                response = probe(request)
                # Django renders a view's response in its handler, which is past this point.
                return response.render() if hasattr(response, "render") else response
            return self._refused(request)
        return self.get_response(request)

    @staticmethod
    def _refused(request: HttpRequest) -> HttpResponse:
        forwarded = settings.USE_X_FORWARDED_HOST and request.META.get("HTTP_X_FORWARDED_HOST")
        host = _shown(forwarded or request.META.get("HTTP_HOST", ""))
        if _is_api_path(request.path_info):
            message = (
                f"The `{HOST_PATH}` property names a host this server does not answer to. "
                f"You sent {json.dumps(host, ensure_ascii=False)}."
            )
            error = ValidationError.for_property(HOST_PATH, message)
            body = error_body(error)
            response: HttpResponse = JsonResponse(
                body, status=error.status_code, json_dumps_params={"separators": (",", ":")}
            )
            error_id = body["id"]
        else:
            response = HttpResponseBadRequest(
                "<h1>Bad Request (400)</h1>", content_type="text/html; charset=utf-8"
            )
            error_id = "-"
        logger.warning(
            "error %s: refused Host %r (not in ALLOWED_HOSTS) for %s %r",
            error_id,
            host,
            request.method,
            _shown(request.path_info),
        )
        return response


REPEATED_SLASHES = re.compile(r"/{2,}")


class ApiPathMiddleware:
    """Matches paths under /api/ as Unleash (Express) does: repeated slashes count as one and a
    trailing slash is optional, so `/api/admin/projects/`, `/api//client/features` (an SDK's
    base URL ending in `/`, joined with `/client/...`) and the exact path reach the same view.
    Other paths (the Django admin's, which end in `/`) are left as they are."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if ("//" in path or (path.endswith("/") and len(path) > 1)) and not _encodes_a_slash(
            request
        ):
            normal = REPEATED_SLASHES.sub("/", path).rstrip("/")
            if _is_api_path(normal):
                # Routing reads path_info; `request.path` keeps what was sent, which the 404's
                # message quotes.
                request.path_info = normal
        return self.get_response(request)


def _encodes_a_slash(request: HttpRequest) -> bool:
    """Whether the path as sent holds `%2F`, which the server decoded into a slash of
    `path_info`: merging or dropping that one would name another resource (flag `a/` is not
    flag `a`). gunicorn passes the path as sent (RAW_URI); a server that does not (Django's
    development server, the test client) leaves nothing to tell them apart by."""
    raw = request.META.get("RAW_URI") or request.META.get("REQUEST_URI") or ""
    return "%2f" in raw.split("?", 1)[0].lower()  # the path's: a query may hold any
