"""OpenAPI pieces shared by every app: the security scheme, the error schema, and the view that
serves the document."""

from __future__ import annotations

import threading
from typing import ClassVar

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework import serializers
from rest_framework.request import Request


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """A token in the `Authorization` header; subclasses name another authentication class."""

    target_class = "flagadmin.api.authentication.ApiTokenAuthentication"
    name = "apiKey"
    description = (
        "An API token; the whole header value is the token (a leading `Bearer ` is accepted)."
    )

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": self.description,
        }


_detail = inline_serializer(
    name="errorDetailSchema",
    fields={
        "path": serializers.CharField(required=False),
        "message": serializers.CharField(),
    },
)

ErrorSerializer = inline_serializer(
    name="errorSchema",
    fields={
        "id": serializers.UUIDField(help_text="Id of this error instance, also logged."),
        "name": serializers.CharField(help_text="Kind of error, e.g. ValidationError."),
        "message": serializers.CharField(help_text="What went wrong."),
        "details": serializers.ListField(child=_detail, required=False),
        "permissions": serializers.ListField(
            child=serializers.CharField(),
            required=False,
            help_text="On 403: the permissions the operation needs.",
        ),
    },
)

ERROR_DESCRIPTIONS = {
    400: "The request does not conform to the schema (ValidationError).",
    401: "No credentials, or an unknown, expired or revoked token (AuthenticationRequired).",
    403: "Valid credentials without the permission (NoAccessError).",
    404: "The resource does not exist (NotFoundError).",
    405: "Method not allowed on this path (MethodNotAllowedError).",
    409: "The name is taken (NameExistsError).",
    413: "Body over 100 kB (ContentTooLargeError).",
    415: "Content type is not application/json (ContentTypeerror).",
    503: "The database is busy or unreachable (ServiceUnavailableError).",
}


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """The error schema for each status, for `extend_schema(responses={...})`.
    401 and 403 are always included: every admin endpoint can answer them."""
    wanted = sorted({401, 403, *statuses})
    return {
        code: OpenApiResponse(response=ErrorSerializer, description=ERROR_DESCRIPTIONS[code])
        for code in wanted
    }


def drop_request_suffix(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: name request components as the specification does.

    With COMPONENT_SPLIT_REQUEST, drf-spectacular names every request component `<name>Request`
    (`createFeatureSchemaRequest`). Where no response component of the plain name exists, the
    suffix is dropped so the document says `createFeatureSchema`, as the specification does."""
    schemas = result.get("components", {}).get("schemas", {})
    renames = {
        name: name[: -len("Request")]
        for name in schemas
        if name.endswith("Request") and name[: -len("Request")] not in schemas
    }
    if not renames:
        return result
    for old, new in renames.items():
        schemas[new] = schemas.pop(old)
    prefix = "#/components/schemas/"
    refs = {prefix + old: prefix + new for old, new in renames.items()}

    def rewrite(node):
        if isinstance(node, dict):
            return {
                key: refs.get(value, value) if key == "$ref" else rewrite(value)
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    result = rewrite(result)
    result["components"]["schemas"] = dict(sorted(result["components"]["schemas"].items()))
    return result


class OpenApiDocumentView(SpectacularJSONAPIView):
    """`/docs/openapi.json`, generated once per process and media type and then served as the
    same bytes: it depends only on the code and the settings, and generating it costs a
    fraction of a second of CPU, which concurrent requests each spent again. One request
    generates it; others that come meanwhile wait for it."""

    _rendered: ClassVar[dict[tuple[str | None, str], bytes]] = {}
    _generating: ClassVar[threading.Lock] = threading.Lock()

    def _get_schema_response(self, request: Request) -> HttpResponse:
        version = self.api_version or request.version or self._get_version_parameter(request)
        renderer = request.accepted_renderer
        key = (version, request.accepted_media_type)
        body = self._rendered.get(key)
        if body is None:
            with self._generating:
                body = self._rendered.get(key)
                if body is None:
                    generator = self.generator_class(
                        urlconf=self.urlconf, api_version=version, patterns=self.patterns
                    )
                    document = generator.get_schema(request=request, public=self.serve_public)
                    body = renderer.render(
                        document, request.accepted_media_type, self.get_renderer_context()
                    )
                    self._rendered[key] = body
        # The headers DRF's Response gave it: the renderer's media type, the file name.
        charset = renderer.charset
        return HttpResponse(
            body,
            content_type=f"{renderer.media_type}; charset={charset}"
            if charset
            else renderer.media_type,
            headers={
                "Content-Disposition": (
                    f'inline; filename="{self._get_filename(request, version)}"'
                )
            },
        )

    @classmethod
    def forget(cls) -> None:
        cls._rendered.clear()


@receiver(setting_changed)
def _settings_changed(**kwargs: object) -> None:
    # Tests that change settings (URLs, SPECTACULAR_SETTINGS) get a document of their own.
    OpenApiDocumentView.forget()
