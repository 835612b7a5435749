"""GET /api/admin/projects/:projectId/overview and GET /api/admin/environments/project/:projectId
(Unleash 8.2's getProjectOverview and getProjectEnvironments)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from flagadmin.core.models import Role, TokenType
from projects.models import Project, ProjectEnvironment
from tests.conftest import assert_error
from tests.factories import (
    AuditEventFactory,
    FeatureEnvironmentFactory,
    FeatureFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
    make_token,
)

CREATED = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


@pytest.fixture
def shop(db):
    project = ProjectFactory(id="shop", name="Shop", description="The shop", created_at=CREATED)
    ProjectEnvironment.objects.filter(project=project, environment_id="production").delete()
    return project


def test_overview__new_project__whole_body(admin_client, shop):
    response = admin_client.get("/api/admin/projects/shop/overview")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "stats": {
            "avgTimeToProdCurrentWindow": 0,
            "createdCurrentWindow": 0,
            "createdPastWindow": 0,
            "archivedCurrentWindow": 0,
            "archivedPastWindow": 0,
            "projectActivityCurrentWindow": 0,
            "projectActivityPastWindow": 0,
            "projectMembersAddedCurrentWindow": 0,
        },
        "name": "Shop",
        "description": "The shop",
        "mode": "open",
        "featureLimit": None,
        "featureNaming": {"pattern": None, "example": None, "description": None},
        "linkTemplates": [],
        "defaultStickiness": "default",
        "health": 100,
        "technicalDebt": 0,
        "favorite": False,
        "updatedAt": None,
        "createdAt": "2026-01-05T08:00:00Z",
        "onboardingStatus": {"status": "onboarding-started"},
        "environments": [{"environment": "development"}],
        "featureTypeCounts": [],
        "members": 0,
        "version": 1,
    }


def test_overview__flags_events_members__figures_and_windows(admin_client, shop):
    now = timezone.now()
    FeatureFactory(name="old", project_id="shop", created_at=now - timedelta(days=45))
    FeatureFactory(name="new", project_id="shop", type="operational", created_at=now, stale=True)
    FeatureFactory(
        name="gone",
        project_id="shop",
        created_at=now - timedelta(days=70),
        archived_at=now - timedelta(days=2),
    )
    AuditEventFactory(project="shop", created_at=now - timedelta(days=1))
    AuditEventFactory(project="shop", created_at=now - timedelta(days=40))
    AuditEventFactory(project="other", created_at=now)
    ProjectRoleAssignmentFactory(project_id="shop", user=UserFactory(), role_id=Role.OWNER)

    body = admin_client.get("/api/admin/projects/shop/overview").json()

    assert body["stats"] == {
        "avgTimeToProdCurrentWindow": 0,
        "createdCurrentWindow": 1,
        "createdPastWindow": 1,
        "archivedCurrentWindow": 1,
        "archivedPastWindow": 0,
        "projectActivityCurrentWindow": 1,
        "projectActivityPastWindow": 1,
        "projectMembersAddedCurrentWindow": 0,
    }
    # old: potentially stale (45 days, release); new: stale: health 100 - 50 - 50
    assert (body["health"], body["technicalDebt"]) == (0, 100)
    assert body["featureTypeCounts"] == [
        {"type": "operational", "count": 1},
        {"type": "release", "count": 1},
    ]
    assert body["members"] == 1
    assert body["onboardingStatus"] == {"status": "first-flag-created", "feature": "gone"}


def test_overview__a_flag_reported__onboarded(admin_client, shop):
    FeatureFactory(project_id="shop", last_seen_at=timezone.now())

    body = admin_client.get("/api/admin/projects/shop/overview").json()

    assert body["onboardingStatus"] == {"status": "onboarded"}


def test_overview__archived_project__archived_at_shown(admin_client, shop):
    Project.objects.filter(pk="shop").update(archived_at=CREATED + timedelta(days=1))

    body = admin_client.get("/api/admin/projects/shop/overview").json()

    assert body["archivedAt"] == "2026-01-06T08:00:00Z"


def test_overview__unknown_project__404(admin_client, db):
    body = assert_error(admin_client.get("/api/admin/projects/nope/overview"), 404, "NotFoundError")

    assert body["message"] == "Project with id nope does not exist"


def test_overview__fixed_number_of_queries(admin_client, shop, django_assert_max_num_queries):
    for _ in range(5):
        FeatureFactory(project_id="shop")
    admin_client.get("/api/admin/projects/shop/overview")

    with django_assert_max_num_queries(16):
        assert admin_client.get("/api/admin/projects/shop/overview").status_code == 200


def test_project_environments__counts_and_visibility(admin_client, shop):
    flag = FeatureFactory(project_id="shop")
    FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=True)
    FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=True)
    other = FeatureFactory(project_id="default")
    FeatureEnvironmentFactory(feature=other, environment_id="development", enabled=True)
    make_token(TokenType.CLIENT, projects=["shop"], environment="development")
    make_token(TokenType.CLIENT, projects=None, environment="development")  # every project
    make_token(TokenType.CLIENT, projects=["default"], environment="development")
    revoked, _ = make_token(TokenType.CLIENT, projects=["shop"], environment="production")
    revoked.revoked_at = timezone.now()
    revoked.save()

    response = admin_client.get("/api/admin/environments/project/shop")

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
                "projectApiTokenCount": 2,
                "projectEnabledToggleCount": 1,
                "visible": True,
            },
            {
                "name": "production",
                "type": "production",
                "sortOrder": 200,
                "enabled": True,
                "protected": False,
                "requiredApprovals": None,
                "projectApiTokenCount": 0,
                "projectEnabledToggleCount": 1,
                "visible": False,
            },
        ],
    }


def test_project_environments__unknown_project__404(admin_client, db):
    """Unleash 8.2 answers 200 with every environment invisible: a typo looks like a project
    without environments. Here it is the 404 of any project path."""
    body = assert_error(
        admin_client.get("/api/admin/environments/project/nope"), 404, "NotFoundError"
    )

    assert body["message"] == "Project with id nope does not exist"


def test_project_environments__one_statement_past_the_lookup(
    admin_client, shop, django_assert_max_num_queries
):
    admin_client.get("/api/admin/environments/project/shop")

    with django_assert_max_num_queries(3):  # the token, the project, the environments
        assert admin_client.get("/api/admin/environments/project/shop").status_code == 200


@pytest.mark.parametrize(
    "url", ["/api/admin/projects/shop/overview", "/api/admin/environments/project/shop"]
)
def test_reading_projects__viewer__may_read(viewer_client, shop, url):
    assert viewer_client.get(url).status_code == 200


@pytest.mark.parametrize(
    "url", ["/api/admin/projects/shop/overview", "/api/admin/environments/project/shop"]
)
def test_reading_projects__anonymous__401(anon_client, db, url):
    assert_error(anon_client.get(url), 401, "AuthenticationRequired")


@pytest.mark.parametrize(
    "url", ["/api/admin/projects/shop/overview", "/api/admin/environments/project/shop"]
)
def test_reading_projects__client_token__403(client_token_client, url):
    assert_error(client_token_client.get(url), 403, "NoAccessError")
