"""The OpenAPI document at /docs/openapi.json and Swagger UI at /docs/."""

from __future__ import annotations

import pytest

from flagadmin.api.schema import drop_request_suffix

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


# Unleash's tag of each operation (its /docs/openapi.json; Enterprise operations as
# ../shared/reference/unleash-observed.md records them: groups under Users, SAML under Auth).
UNLEASH_TAGS = {
    "/api/admin/api-tokens": "API tokens",
    "/api/admin/api-tokens/{token}": "API tokens",
    "/api/admin/projects/{projectId}/api-tokens": "Projects",
    "/api/admin/projects/{projectId}/api-tokens/{token}": "Projects",
    "/api/admin/environments": "Environments",
    "/api/admin/feature-types": "Feature Types",
    "/api/admin/ui-config": "Admin UI",
    "/api/admin/events": "Events",
    "/api/admin/events/{featureName}": "Events",
    "/api/admin/search/events": "Events",
    "/api/admin/search/features": "Search",
    "/api/admin/projects/{projectId}/overview": "Projects",
    "/api/admin/environments/project/{projectId}": "Environments",
    "/api/admin/user": "Users",
    "/api/admin/metrics/applications": "Metrics",
    "/api/admin/metrics/applications/{appName}": "Metrics",
    "/api/admin/client-metrics/features/{name}": "Metrics",
    "/api/admin/client-metrics/features/{name}/raw": "Metrics",
    "/api/admin/environments/{name}": "Environments",
    "/api/admin/auth/saml/settings": "Auth",
    "/api/admin/groups": "Users",
    "/api/admin/groups/{groupId}": "Users",
    "/api/admin/projects": "Projects",
    "/api/admin/projects/{projectId}": "Projects",
    "/api/admin/projects/{projectId}/access": "Projects",
    "/api/admin/projects/archive/{projectId}": "Projects",
    "/api/admin/projects/revive/{projectId}": "Projects",
    "/api/admin/features-batch/export": "Import/Export",
    "/api/admin/features-batch/validate": "Import/Export",
    "/api/admin/features-batch/import": "Import/Export",
    # The flag batch operations (archiveFeatures, reviveFeatures), tagged as Unleash tags them.
    "/api/admin/projects/{projectId}/archive": "Features",
    "/api/admin/projects/{projectId}/revive": "Archive",
    "/api/admin/projects/{projectId}/delete": "Archive",
    "/api/admin/projects/{projectId}/features": "Features",
    "/api/admin/projects/{projectId}/bulk_features/environments/{environment}/on": "Features",
    "/api/admin/projects/{projectId}/bulk_features/environments/{environment}/off": "Features",
    "/api/admin/projects/{projectId}/features/{featureName}": "Features",
    "/api/admin/projects/{projectId}/stale": "Features",
    "/api/admin/features/validate": "Features",
    "/api/admin/archive/{featureName}": "Archive",
    "/api/admin/archive/revive/{featureName}": "Archive",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}": (
        "Features"
    ),
    "/api/admin/projects/{projectId}/features/{featureName}/clone": "Features",
    "/api/admin/projects/{projectId}/features/{featureName}/dependencies": "Dependencies",
    "/api/admin/projects/{projectId}/features/{featureName}/dependencies/{parent}": (
        "Dependencies"
    ),
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/on": (
        "Features"
    ),
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/off": (
        "Features"
    ),
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"
    "/strategies": "Features",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"
    "/strategies/{strategyId}": "Features",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"
    "/strategies/set-sort-order": "Features",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"
    "/variants": "Features",
    "/api/admin/projects/{projectId}/features/{featureName}/variants-batch": "Features",
    "/api/admin/features/{featureName}/tags": "Features",
    "/api/admin/features/{featureName}/tags/{type}/{value}": "Features",
    "/api/admin/tags": "Tags",
    "/api/admin/tags/{type}": "Tags",
    "/api/admin/tags/{type}/{value}": "Tags",
    "/api/admin/tag-types": "Tags",
    "/api/admin/tag-types/validate": "Tags",
    "/api/admin/tag-types/{name}": "Tags",
    "/api/admin/segments": "Segments",
    "/api/admin/segments/validate": "Segments",
    "/api/admin/segments/{id}": "Segments",
    "/api/admin/segments/{id}/strategies": "Segments",
    "/api/admin/segments/strategies/{strategyId}": "Segments",
    "/api/admin/segments/strategies": "Strategies",
    "/api/admin/context": "Context",
    "/api/admin/context/validate": "Context",
    "/api/admin/context/{contextField}": "Context",
    "/api/admin/context/{contextField}/legal-values": "Context",
    "/api/admin/context/{contextField}/legal-values/{legalValue}": "Context",
    "/api/admin/context/{contextField}/strategies": "Strategies",
    "/api/admin/strategies": "Strategies",
    "/api/admin/strategies/{name}": "Strategies",
    "/api/admin/strategies/{strategyName}/deprecate": "Strategies",
    "/api/admin/strategies/{strategyName}/reactivate": "Strategies",
    "/api/client/features": "Client",
    "/api/client/features/{featureName}": "Client",
    "/api/client/metrics": "Client",
    "/api/client/register": "Client",
    "/api/client/metrics/bulk": "Unleash Edge",
    "/api/frontend": "Frontend API",
    "/api/frontend/client/metrics": "Frontend API",
    "/api/frontend/client/register": "Frontend API",
    "/edge/validate": "Unleash Edge",
    "/api/admin/service-account": "Service Accounts",
    "/api/admin/service-account/{id}/token": "Service Accounts",
    "/api/admin/user-admin": "Users",
    "/api/admin/playground": "Playground",
    "/api/admin/playground/advanced": "Playground",
}


def test_openapi__each_operation_has_unleash_tag(document):
    tags = {(path, method): operation["tags"] for path, method, operation in _operations(document)}

    assert tags == {key: [UNLEASH_TAGS[key[0]]] for key in tags}


@pytest.mark.parametrize(
    ("schema", "description"),
    [
        pytest.param("createGroupUserIdSchema", "A user, by id.", id="group-user-id"),
        pytest.param("createGroupUserSchema", "A member to have in the group.", id="group-user"),
        pytest.param(
            "createPatSchema",
            "A personal access token to create for the service account; its secret is shown once.",
            id="pat",
        ),
        pytest.param(
            "createServiceAccountSchema",
            "A service account to create: a user that cannot sign in and acts through its tokens.",
            id="service-account",
        ),
    ],
)
def test_openapi__request_schemas_describe_the_body_not_the_code(document, schema, description):
    assert document["components"]["schemas"][schema]["description"] == description


def test_openapi__no_internal_base_class_text_in_descriptions(document):
    descriptions = [s.get("description", "") for s in document["components"]["schemas"].values()]

    assert not [d for d in descriptions if "request serializers" in d or "Base for" in d]
