"""OpenAPI pieces shared by every app: the security scheme and the error schema."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers


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
