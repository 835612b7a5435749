"""GET /api/admin/feature-types."""

from __future__ import annotations

import pytest

from tests.conftest import assert_error

URL = "/api/admin/feature-types"


@pytest.mark.parametrize("fixture", ["admin_client", "viewer_client"])
def test_feature_types__any_principal__unleash_list_with_lifetimes(db, request, fixture):
    response = request.getfixturevalue(fixture).get(URL)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "version": 1,
        "types": [
            {
                "id": "release",
                "name": "Release",
                "description": "Roll out new or incomplete features. Expected lifetime ~40 days",
                "lifetimeDays": 40,
            },
            {
                "id": "experiment",
                "name": "Experiment",
                "description": "A/B and multivariate testing. Expected lifetime ~40 days",
                "lifetimeDays": 40,
            },
            {
                "id": "operational",
                "name": "Operational",
                "description": "Transition between technical implementations with minimal risk. "
                "Expected lifetime: ~7 days",
                "lifetimeDays": 7,
            },
            {
                "id": "kill-switch",
                "name": "Kill switch",
                "description": "Quickly disable certain functionalities or features. "
                "Expected lifetime: permanent",
                "lifetimeDays": None,
            },
            {
                "id": "permission",
                "name": "Permission",
                "description": "Control feature access based on user roles or entitlements. "
                "Expected lifetime: permanent",
                "lifetimeDays": None,
            },
        ],
    }


def test_feature_types__no_query_past_authentication(admin_client, django_assert_max_num_queries):
    with django_assert_max_num_queries(2):  # the token lookup, its first-use `seenAt`
        assert admin_client.get(URL).status_code == 200


def test_feature_types__anonymous__401(anon_client, db):
    assert_error(anon_client.get(URL), 401, "AuthenticationRequired")


def test_feature_types__client_token__403(client_token_client):
    assert_error(client_token_client.get(URL), 403, "NoAccessError")
