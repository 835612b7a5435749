"""GET /api/admin/environments and /api/admin/environments/:name (Unleash's getAllEnvironments
and getEnvironment, shapes as Unleash 8.2 answers them)."""

from __future__ import annotations

import json

import pytest

from flagadmin.core.models import TokenType
from projects.models import Environment
from tests.conftest import assert_error
from tests.factories import ProjectFactory, make_token

ENVIRONMENTS = "/api/admin/environments"
FEATURES = "/api/admin/projects/default/features"


def _turn_on(client, name: str, environment: str) -> None:
    response = client.post(f"{FEATURES}/{name}/environments/{environment}/on")
    assert response.status_code == 200, response.content


def test_environments__every_one_in_order_with_counts(admin_client):
    ProjectFactory(id="web")  # a project with every environment
    make_token(TokenType.CLIENT, environment="production")
    make_token(TokenType.CLIENT, environment="production")
    for name in ("a", "b"):
        response = admin_client.post(
            FEATURES, json.dumps({"name": name}), content_type="application/json"
        )
        assert response.status_code == 201
    _turn_on(admin_client, "a", "development")
    _turn_on(admin_client, "b", "development")
    _turn_on(admin_client, "b", "production")

    response = admin_client.get(ENVIRONMENTS)

    assert response.status_code == 200
    assert response.json() == {
        "version": 1,
        "environments": [
            {
                "name": "development",
                "type": "development",
                "sortOrder": 100,
                "enabled": True,
                "protected": False,
                "requiredApprovals": None,
                "projectCount": 2,
                "apiTokenCount": 0,
                "enabledToggleCount": 2,
            },
            {
                "name": "production",
                "type": "production",
                "sortOrder": 200,
                "enabled": True,
                "protected": False,
                "requiredApprovals": None,
                "projectCount": 2,
                "apiTokenCount": 2,
                "enabledToggleCount": 1,
            },
        ],
    }


def test_environments__one_statement_whatever_their_number(
    admin_client, django_assert_max_num_queries
):
    Environment.objects.bulk_create(
        [Environment(name=f"env-{n}", type="test", sort_order=300 + n) for n in range(20)]
    )

    admin_client.get(ENVIRONMENTS)  # the token's first use records it (an UPDATE)

    # The token lookup, and the list with its three counts.
    with django_assert_max_num_queries(2):
        response = admin_client.get(ENVIRONMENTS)

    assert len(response.json()["environments"]) == 22


def test_environment__one_by_name(viewer_client):
    response = viewer_client.get(f"{ENVIRONMENTS}/production")

    assert response.status_code == 200
    assert response.json() == {
        "name": "production",
        "type": "production",
        "sortOrder": 200,
        "enabled": True,
        "protected": False,
        "requiredApprovals": None,
    }


def test_environment__unknown__404(admin_client):
    body = assert_error(admin_client.get(f"{ENVIRONMENTS}/nope"), 404, "NotFoundError")

    assert body["message"] == "Could not find environment with name: nope"


@pytest.mark.parametrize("path", [ENVIRONMENTS, f"{ENVIRONMENTS}/development"])
def test_environments__client_token__403(client_token_client, path):
    assert_error(client_token_client.get(path), 403, "NoAccessError")


@pytest.mark.parametrize("path", [ENVIRONMENTS, f"{ENVIRONMENTS}/development"])
def test_environments__anonymous__401(anon_client, db, path):
    assert_error(anon_client.get(path), 401, "AuthenticationRequired")
