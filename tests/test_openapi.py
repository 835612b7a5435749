"""The OpenAPI document at /docs/openapi.json and Swagger UI at /docs/."""

from __future__ import annotations

import pytest

from flagadmin.schema import drop_request_suffix

HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture
def document(anon_client, db) -> dict:
    response = anon_client.get("/docs/openapi.json")
    assert response.status_code == 200
    return response.json()


def _operations(document: dict):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield path, method, operation


def test_openapi__security_scheme_is_the_authorization_header(document):
    assert document["components"]["securitySchemes"]["apiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": "An API token; the whole header value is the token "
        "(a leading `Bearer ` is accepted).",
    }


def test_openapi__core_operations(document):
    operations = {
        (path, method): operation["operationId"]
        for path, method, operation in _operations(document)
    }

    assert operations[("/api/admin/api-tokens", "get")] == "getAllApiTokens"
    assert operations[("/api/admin/api-tokens", "post")] == "createApiToken"
    assert operations[("/api/admin/service-account", "post")] == "createServiceAccount"
    assert (
        operations[("/api/admin/service-account/{id}/token", "post")] == "createServiceAccountToken"
    )
    create = document["paths"]["/api/admin/api-tokens"]["post"]
    assert set(create["responses"]) == {"201", "400", "401", "403", "413", "415"}
    body_ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body_ref == "#/components/schemas/createApiTokenSchema"


def test_openapi__every_operation_is_authenticated_and_documents_401_403(document):
    for path, method, operation in _operations(document):
        # The client API takes client tokens only: its own scheme, same header.
        scheme = "clientKey" if path.startswith("/api/client/") else "apiKey"
        assert {scheme: []} in operation["security"], (path, method)
        for status in ("401", "403"):
            assert status in operation["responses"], (path, method, status)
            content = operation["responses"][status]["content"]["application/json"]
            assert content["schema"] == {"$ref": "#/components/schemas/errorSchema"}, (
                path,
                method,
                status,
            )


def test_openapi__every_error_status_uses_the_error_schema(document):
    for path, method, operation in _operations(document):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/errorSchema"}, (path, method)


def test_openapi__no_component_keeps_a_needless_request_suffix(document):
    schemas = document["components"]["schemas"]

    for name in schemas:
        if name.endswith("Request"):
            assert name.removesuffix("Request") in schemas


def test_drop_request_suffix__renames_components_and_refs():
    ref = {"$ref": "#/components/schemas/createThingRequest"}
    result = {
        "paths": {
            "/x": {"post": {"requestBody": {"content": {"application/json": {"schema": ref}}}}}
        },
        "components": {
            "schemas": {
                "createThingRequest": {"type": "object"},
                "thingRequest": {"type": "object", "properties": {"a": {}}},
                "thing": {"type": "object"},
            }
        },
    }

    renamed = drop_request_suffix(result, None, None, True)

    assert list(renamed["components"]["schemas"]) == ["createThing", "thing", "thingRequest"]
    schema = renamed["paths"]["/x"]["post"]["requestBody"]["content"]["application/json"]
    assert schema["schema"] == {"$ref": "#/components/schemas/createThing"}


def test_swagger_ui(anon_client, db):
    response = anon_client.get("/docs/")

    assert response.status_code == 200
    # Served by the app itself (drf-spectacular-sidecar), so it works without a CDN.
    assert (
        b"/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in response.content
    )
    asset = anon_client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert asset.status_code == 200
