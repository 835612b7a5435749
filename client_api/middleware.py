"""GET /api/client/features answered from the worker's memory, before the rest of the stack.

SDKs poll it every few seconds and nearly always get a 304. When the worker has looked the
token up lately and keeps a current body for the query (client_api/authentication.py,
client_api/selectors.py), the answer needs neither the database nor Django's session, CSRF,
auth and messages middleware, nor DRF's dispatch: this answers it here, with the headers the
whole stack would give it. Anything else (no token or an unknown one, a query or an
`Unleash-Client-Spec` header to refuse, a body to build, an If-None-Match naming another state,
which must be revalidated) goes on to the view, which answers as it always does. The header
chooses the body's shape, as in the view (segments inlined, or listed once for SDKs of client
specification 4.2 or later). Figures: docs/client-payload.md.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified

from client_api.authentication import remembered_client
from client_api.selectors import kept_body
from client_api.serializers import parse_feature_filter
from client_api.views import announces_segments, etag_matches
from flagadmin.api.errors import ApiError
from flagadmin.core.tokens import token_from_header

PATH = "/api/client/features"


def stack_headers() -> dict[str, str]:
    """What the view's answer gets on its way out besides its length (CommonMiddleware's):
    DRF's Allow, and the headers of Django's SecurityMiddleware and XFrameOptionsMiddleware
    (as configured)."""
    headers = {"Allow": "GET, HEAD, OPTIONS", "X-Frame-Options": settings.X_FRAME_OPTIONS}
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers["X-Content-Type-Options"] = "nosniff"
    policy = settings.SECURE_REFERRER_POLICY
    if policy:
        headers["Referrer-Policy"] = policy if isinstance(policy, str) else ",".join(policy)
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers["Cross-Origin-Opener-Policy"] = settings.SECURE_CROSS_ORIGIN_OPENER_POLICY
    return headers


class ClientFeaturesFromMemoryMiddleware:
    """In MIDDLEWARE after the Host check and the API path matching (`/api//client/features`
    is this path too), before everything else."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.headers = stack_headers()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == PATH and request.method == "GET":
            response = self.from_memory(request)
            if response is not None:
                return response
        return self.get_response(request)

    def from_memory(self, request: HttpRequest) -> HttpResponse | None:
        header = request.META.get("HTTP_AUTHORIZATION")
        client = remembered_client(token_from_header(header)) if header else None
        if client is None:
            return None
        try:
            segments = announces_segments(request.META.get("HTTP_UNLEASH_CLIENT_SPEC"))
            narrowed = parse_feature_filter(request.GET)
        except ApiError:
            return None  # the view refuses it, with the error body
        found = kept_body(
            projects=client.projects,
            environment=client.environment,
            revision=client.revision,
            narrowed=narrowed,
            segments=segments,
        )
        if found is None:
            return None
        if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
        if not if_none_match:
            response = HttpResponse(found.body, content_type="application/json")
        elif etag_matches(if_none_match, found.etag):
            response = HttpResponseNotModified()
        else:
            return None
        response["ETag"] = found.etag
        response["Content-Length"] = str(len(response.content))
        for name, value in self.headers.items():
            response[name] = value
        return response


def memory_answerer() -> Callable[[HttpRequest], HttpResponse | None]:
    """What `ANSWERED_FROM_MEMORY` names for `/api/client/features`: this middleware's answer
    from memory (`flagadmin.serving.answered_from_memory`)."""
    return ClientFeaturesFromMemoryMiddleware(_not_reached).from_memory


def _not_reached(request: HttpRequest) -> HttpResponse:
    raise AssertionError("from_memory never passes a request on")
