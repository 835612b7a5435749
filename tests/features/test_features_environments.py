"""Turning a flag on and off in an environment (toggleFeatureEnvironmentOn/Off) and listing a
project's flags (getFeatures)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.db.models import JSONField, Value

from features.models import FavoriteFeature, Feature, FeatureEnvironment, FeatureStrategy
from flagadmin.core.models import AuditEvent
from projects.models import Environment
from tests.conftest import assert_error
from tests.factories import (
    FeatureFactory,
    FeatureStrategyFactory,
    FeatureTagFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    TagFactory,
    TagTypeFactory,
)

FEATURES = "/api/admin/projects/default/features"


def toggle(client, name: str, state: str, environment: str = "development", project="default"):
    return client.post(
        f"/api/admin/projects/{project}/features/{name}/environments/{environment}/{state}",
        content_type="application/json",
    )


@pytest.fixture
def flag(admin_client) -> str:
    response = admin_client.post(
        FEATURES, json.dumps({"name": "checkout"}), content_type="application/json"
    )
    assert response.status_code == 201
    return "checkout"


def _state(name: str) -> dict[str, bool]:
    return dict(
        FeatureEnvironment.objects.filter(feature_id=name).values_list("environment_id", "enabled")
    )


# --- on ------------------------------------------------------------------------------------


def test_toggle_on__no_strategy__adds_flexible_rollout_100_and_events(admin_client, flag):
    response = toggle(admin_client, flag, "on")

    assert response.status_code == 200
    body = response.json()
    assert body["name"] == flag
    assert body["enabled"] is True
    development = next(e for e in body["environments"] if e["name"] == "development")
    assert development["enabled"] is True
    [strategy] = development["strategies"]
    assert strategy == {
        "id": strategy["id"],
        "name": "flexibleRollout",
        "title": None,
        "disabled": False,
        "featureName": flag,
        "sortOrder": 0,
        "segments": [],
        "constraints": [],
        "variants": [],
        "parameters": {"rollout": "100", "groupId": flag, "stickiness": "default"},
    }
    assert _state(flag) == {"development": True, "production": False}
    events = list(
        AuditEvent.objects.filter(feature_name=flag)
        .order_by("id")
        .values_list("type", "environment", "created_by", "project")
    )
    assert events == [
        ("feature-created", None, "admin-tok", "default"),
        ("feature-strategy-add", "development", "admin-tok", "default"),
        ("feature-environment-enabled", "development", "admin-tok", "default"),
    ]
    added = AuditEvent.objects.get(type="feature-strategy-add")
    assert added.data == {
        "id": strategy["id"],
        "name": "flexibleRollout",
        "title": None,
        "disabled": False,
        "constraints": [],
        "parameters": {"rollout": "100", "groupId": flag, "stickiness": "default"},
        "variants": [],
        "sortOrder": 0,
        "segments": [],
    }


def test_toggle_on__with_strategy__keeps_it(admin_client, flag):
    admin_client.post(
        f"{FEATURES}/{flag}/environments/development/strategies",
        json.dumps({"name": "default"}),
        content_type="application/json",
    )

    assert toggle(admin_client, flag, "on").status_code == 200

    assert list(FeatureStrategy.objects.values_list("name", flat=True)) == ["default"]


def test_toggle_on__twice__one_event(admin_client, flag):
    toggle(admin_client, flag, "on")

    assert toggle(admin_client, flag, "on").status_code == 200

    assert AuditEvent.objects.filter(type="feature-environment-enabled").count() == 1
    assert FeatureStrategy.objects.count() == 1


def test_toggle_off__keeps_strategies_records_event(admin_client, flag):
    toggle(admin_client, flag, "on")

    response = toggle(admin_client, flag, "off")

    assert response.status_code == 200
    assert response.json()["enabled"] is False
    assert _state(flag) == {"development": False, "production": False}
    assert FeatureStrategy.objects.count() == 1
    event = AuditEvent.objects.get(type="feature-environment-disabled")
    where = (event.feature_name, event.environment, event.project)
    assert where == (flag, "development", "default")


def test_toggle_off__already_off__no_event(admin_client, flag):
    assert toggle(admin_client, flag, "off").status_code == 200

    assert not AuditEvent.objects.filter(type="feature-environment-disabled").exists()


def test_toggle_on__tags_on_the_event(admin_client, flag):
    FeatureTagFactory(feature=Feature.objects.get(pk=flag), tag=TagFactory(value="team"))

    toggle(admin_client, flag, "on")

    event = AuditEvent.objects.get(type="feature-environment-enabled")
    assert event.tags == [{"type": "simple", "value": "team"}]


@pytest.mark.parametrize(
    ("name", "environment", "project"),
    [
        pytest.param("nope", "development", "default", id="unknown-flag"),
        pytest.param("checkout", "staging", "default", id="unknown-environment"),
        pytest.param("checkout", "development", "other", id="other-project"),
    ],
)
def test_toggle__unknown__404(admin_client, flag, name, environment, project):
    response = toggle(admin_client, name, "on", environment=environment, project=project)

    assert_error(response, 404, "NotFoundError")
    assert _state(flag) == {"development": False, "production": False}


@pytest.mark.parametrize("state", ["on", "off"])
def test_toggle__archived_flag__400_as_unleash(admin_client, flag, state):
    # Measured on Unleash 8.2: 400 ArchivedFeatureError for on and off alike.
    admin_client.delete(f"{FEATURES}/{flag}")

    body = assert_error(toggle(admin_client, flag, state), 400, "ArchivedFeatureError")

    assert body["message"] == "Cannot perform this operation on archived features"
    assert _state(flag) == {"development": False, "production": False}


def test_toggle__archived_flag_unknown_environment__404(admin_client, flag):
    admin_client.delete(f"{FEATURES}/{flag}")

    body = assert_error(toggle(admin_client, flag, "on", environment="nope"), 404, "NotFoundError")

    assert body["message"] == f"Could not find environment nope for feature: {flag}"


@pytest.mark.parametrize("state", ["on", "off"])
def test_toggle__viewer__403(viewer_client, flag, state):
    body = assert_error(toggle(viewer_client, flag, state), 403, "NoAccessError")

    assert body["permissions"] == ["UPDATE_FEATURE"]
    assert _state(flag) == {"development": False, "production": False}


def test_toggle__client_token__403(client_token_client, flag):
    assert_error(toggle(client_token_client, flag, "on"), 403, "NoAccessError")


def test_toggle__anonymous__401(anon_client, flag):
    assert_error(toggle(anon_client, flag, "on"), 401, "AuthenticationRequired")


def test_toggle__member_of_the_project__200(viewer_client, flag):
    ProjectRoleAssignmentFactory(project_id="default", user=viewer_client.user, role_id=5)

    assert toggle(viewer_client, flag, "on").status_code == 200

    event = AuditEvent.objects.get(type="feature-environment-enabled")
    assert event.created_by_user_id == viewer_client.user.pk


def test_toggle__member_of_another_project__403(viewer_client, flag):
    from tests.factories import ProjectFactory

    ProjectRoleAssignmentFactory(
        project=ProjectFactory(id="other"), user=viewer_client.user, role_id=5
    )

    assert_error(toggle(viewer_client, flag, "on"), 403, "NoAccessError")


def test_toggle__editor__200(editor_client, flag):
    assert toggle(editor_client, flag, "on").status_code == 200


# Unleash's toggle routes accept any content type (`acceptAnyContentType`; measured on Unleash
# 8.2: a bare `curl -X POST .../on` answers 200): they read no body.
@pytest.mark.parametrize("state", ["on", "off"])
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        pytest.param(None, None, id="no-body-no-content-type"),
        pytest.param("whatever", "text/plain", id="text"),
        pytest.param("a=1", "application/x-www-form-urlencoded", id="form"),
    ],
)
def test_toggle__any_content_type__200(admin_client, flag, state, body, content_type):
    url = f"{FEATURES}/{flag}/environments/development/{state}"
    if body is None:
        response = admin_client.generic("POST", url)  # no Content-Type header at all
    else:
        response = admin_client.generic("POST", url, body, content_type=content_type)

    assert response.status_code == 200
    assert response.json()["name"] == flag
    assert _state(flag)["development"] is (state == "on")


def test_toggle__any_content_type__body_over_the_limit_413(admin_client, flag, settings):
    response = admin_client.generic(
        "POST",
        f"{FEATURES}/{flag}/environments/development/on",
        "x" * (settings.MAX_REQUEST_BODY_BYTES + 1),
        content_type="text/plain",
    )

    assert_error(response, 413, "ContentTooLargeError")
    assert _state(flag)["development"] is False


# --- list --------------------------------------------------------------------------------------


def test_list_features__environments_and_strategy_counts(admin_client, flag):
    toggle(admin_client, flag, "on")
    admin_client.post(
        f"{FEATURES}/{flag}/environments/production/strategies",
        json.dumps({"name": "default", "disabled": True}),
        content_type="application/json",
    )
    admin_client.post(FEATURES, json.dumps({"name": "other"}), content_type="application/json")
    created = {f["name"]: f["createdAt"] for f in admin_client.get(FEATURES).json()["features"]}

    response = admin_client.get(FEATURES)

    assert response.status_code == 200
    assert response.json() == {
        "version": 2,
        "features": [
            {
                "name": flag,
                "type": "release",
                "description": None,
                "stale": False,
                "favorite": False,
                "impressionData": False,
                "createdAt": created[flag],
                "lastSeenAt": None,
                "tags": [],
                "environments": [
                    {
                        "name": "development",
                        "type": "development",
                        "enabled": True,
                        "sortOrder": 100,
                        "variantCount": 0,
                        "lastSeenAt": None,
                        "hasStrategies": True,
                        "hasEnabledStrategies": True,
                        "strategyCount": 1,
                    },
                    {
                        "name": "production",
                        "type": "production",
                        "enabled": False,
                        "sortOrder": 200,
                        "variantCount": 0,
                        "lastSeenAt": None,
                        "hasStrategies": True,
                        "hasEnabledStrategies": False,
                        "strategyCount": 1,
                    },
                ],
            },
            {
                "name": "other",
                "type": "release",
                "description": None,
                "stale": False,
                "favorite": False,
                "impressionData": False,
                "createdAt": created["other"],
                "lastSeenAt": None,
                "tags": [],
                "environments": [
                    {
                        "name": "development",
                        "type": "development",
                        "enabled": False,
                        "sortOrder": 100,
                        "variantCount": 0,
                        "lastSeenAt": None,
                        "hasStrategies": False,
                        "hasEnabledStrategies": False,
                        "strategyCount": 0,
                    },
                    {
                        "name": "production",
                        "type": "production",
                        "enabled": False,
                        "sortOrder": 200,
                        "variantCount": 0,
                        "lastSeenAt": None,
                        "hasStrategies": False,
                        "hasEnabledStrategies": False,
                        "strategyCount": 0,
                    },
                ],
            },
        ],
    }


def _environment_entry(name: str, **changes) -> dict:
    kinds = {"development": ("development", 100), "production": ("production", 200)}
    kind, sort_order = kinds[name]
    entry = {
        "name": name,
        "type": kind,
        "enabled": False,
        "sortOrder": sort_order,
        "variantCount": 0,
        "lastSeenAt": None,
        "hasStrategies": False,
        "hasEnabledStrategies": False,
        "strategyCount": 0,
    }
    return entry | changes


def test_list_features__every_field_order_and_scope(viewer_client):
    """Each field from its row (tags in the order they were added, variants counted, times
    with and without microseconds), flags by creation time then name, a caller's favorites,
    and nothing of archived flags or of other projects."""
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    seen = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    rich = FeatureFactory(
        name="rich",
        type="experiment",
        description="Checkout, take two",
        stale=True,
        impression_data=True,
        created_at=datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        last_seen_at=seen,
    )
    # Same creation time as "alpha": the name decides.
    plain = FeatureFactory(name="plain", created_at=moment)
    alpha = FeatureFactory(name="alpha", created_at=moment)
    archived = FeatureFactory(name="gone", created_at=moment, archived_at=moment)
    ProjectFactory(id="other")
    elsewhere = FeatureFactory(name="away", project_id="other", created_at=moment)
    for feature in (rich, plain, alpha, archived, elsewhere):
        for environment in ("production", "development"):
            FeatureEnvironment.objects.create(feature=feature, environment_id=environment)
    Environment.objects.create(name="qa", type="test", sort_order=150)
    FeatureEnvironment.objects.create(feature=alpha, environment_id="qa", enabled=True)
    FeatureEnvironment.objects.filter(feature=rich, environment_id="development").update(
        enabled=True,
        last_seen_at=seen,
        variants=[
            {"name": "a", "weight": 500, "weightType": "variable", "stickiness": "default"},
            {"name": "b", "weight": 500, "weightType": "variable", "stickiness": "default"},
        ],
    )
    development = FeatureEnvironment.objects.get(feature=rich, environment_id="development")
    FeatureStrategyFactory(feature_environment=development)
    FeatureStrategyFactory(feature_environment=development, disabled=True)
    production = FeatureEnvironment.objects.get(feature=rich, environment_id="production")
    FeatureStrategyFactory(feature_environment=production, disabled=True)
    FeatureTagFactory(feature=rich, tag=TagFactory(value="zeta"))
    FeatureTagFactory(feature=rich, tag=TagFactory(type=TagTypeFactory(name="team"), value="web"))
    FeatureTagFactory(feature=elsewhere, tag=TagFactory(value="away-tag"))
    FavoriteFeature.objects.create(user=viewer_client.user, feature=plain)
    FavoriteFeature.objects.create(user=viewer_client.user, feature=elsewhere)

    response = viewer_client.get(FEATURES)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    plain_entry = {
        "name": "plain",
        "type": "release",
        "description": None,
        "stale": False,
        "favorite": True,
        "impressionData": False,
        "createdAt": "2026-01-02T03:04:05Z",
        "lastSeenAt": None,
        "tags": [],
        "environments": [_environment_entry("development"), _environment_entry("production")],
    }
    assert response.json() == {
        "version": 2,
        "features": [
            plain_entry
            | {
                "name": "alpha",
                "favorite": False,
                "environments": [
                    _environment_entry("development"),
                    {
                        "name": "qa",
                        "type": "test",
                        "enabled": True,
                        "sortOrder": 150,
                        "variantCount": 0,
                        "lastSeenAt": None,
                        "hasStrategies": False,
                        "hasEnabledStrategies": False,
                        "strategyCount": 0,
                    },
                    _environment_entry("production"),
                ],
            },
            plain_entry,
            {
                "name": "rich",
                "type": "experiment",
                "description": "Checkout, take two",
                "stale": True,
                "favorite": False,
                "impressionData": True,
                "createdAt": "2026-01-02T03:04:05.123456Z",
                "lastSeenAt": "2026-03-04T05:06:07.891011Z",
                "tags": [{"type": "simple", "value": "zeta"}, {"type": "team", "value": "web"}],
                "environments": [
                    _environment_entry(
                        "development",
                        enabled=True,
                        variantCount=2,
                        lastSeenAt="2026-03-04T05:06:07.891011Z",
                        hasStrategies=True,
                        hasEnabledStrategies=True,
                        strategyCount=2,
                    ),
                    _environment_entry("production", hasStrategies=True, strategyCount=1),
                ],
            },
        ],
    }


def test_list_features__archived_left_out(admin_client, flag):
    admin_client.delete(f"{FEATURES}/{flag}")

    assert admin_client.get(FEATURES).json() == {"version": 2, "features": []}


@pytest.mark.parametrize("flags", [1, 30])
def test_list_features__query_count_is_constant(admin_client, django_assert_max_num_queries, flags):
    for number in range(flags):
        admin_client.post(
            FEATURES, json.dumps({"name": f"f{number}"}), content_type="application/json"
        )
        FeatureTagFactory(
            feature=Feature.objects.get(pk=f"f{number}"), tag=TagFactory(value=f"tag{number}")
        )

    with django_assert_max_num_queries(6):
        response = admin_client.get(FEATURES)

    assert len(response.json()["features"]) == flags


def test_list_features__viewer__200(viewer_client, flag):
    assert viewer_client.get(FEATURES).status_code == 200


def test_list_features__client_token__403(client_token_client):
    assert_error(client_token_client.get(FEATURES), 403, "NoAccessError")


def test_list_features__anonymous__401(anon_client):
    assert_error(anon_client.get(FEATURES), 401, "AuthenticationRequired")


def test_list_features__unknown_project__200_no_flags(admin_client):
    # As Unleash 8.2 answers (measured): `GET /api/admin/projects/nope/features` is 200.
    response = admin_client.get("/api/admin/projects/nope/features")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.content == b'{"version":2,"features":[]}'


@pytest.mark.parametrize(
    "variants",
    [{"name": "a"}, "text", 3, Value(None, output_field=JSONField())],
    ids=["object", "string", "number", "json-null"],
)
def test_list_features__variants_not_an_array__count_0(admin_client, flag, variants):
    """Only the API's validators stand between a raw write and a non-array: the list still
    answers, counting none."""
    FeatureEnvironment.objects.filter(feature_id=flag).update(variants=variants)

    response = admin_client.get(FEATURES)

    assert response.status_code == 200
    environments = response.json()["features"][0]["environments"]
    assert [env["variantCount"] for env in environments] == [0, 0]
