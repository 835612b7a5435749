"""OpenAPI naming for the feature endpoints.

With COMPONENT_SPLIT_REQUEST, drf-spectacular appends `Request` to every request component
(`createFeatureSchemaRequest`). The specification names request bodies without it
(`createFeatureSchema`, `tagSchema`), so a serializer that declares its specification name with
`extend_schema_serializer(component_name=...)` keeps exactly that name in both directions. This
is sound only for serializers whose request and response schemas are the same (plain fields, no
read-only or write-only ones), which is the case for the ones named so here.
"""

from __future__ import annotations

from drf_spectacular.drainage import get_override, has_override
from drf_spectacular.openapi import AutoSchema

REQUEST_SUFFIX = "Request"


class SpecNamedAutoSchema(AutoSchema):
    def _get_serializer_name(self, serializer, direction, bypass_extensions=False) -> str:
        name = super()._get_serializer_name(serializer, direction, bypass_extensions)
        if (
            direction == "request"
            and has_override(serializer, "component_name")
            and name == get_override(serializer, "component_name") + REQUEST_SUFFIX
        ):
            return name[: -len(REQUEST_SUFFIX)]
        return name
