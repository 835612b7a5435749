"""GET and DELETE /api/admin/projects/:projectId/features/:featureName (contract section 3's
companions): the same `featureSchema` as the creation answers, and archiving."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from features.models import (
    FavoriteFeature,
    Feature,
    FeatureDependency,
    FeatureLifecycleStage,
    FeatureStrategySegment,
    Segment,
)
from flagadmin.core.models import AuditEvent, Role, TokenType
from projects.models import Environment
from tests.conftest import assert_error
from tests.factories import (
    AuditEventFactory,
    FeatureDependencyFactory,
    FeatureEnvironmentFactory,
    FeatureFactory,
    FeatureLifecycleStageFactory,
    FeatureStrategyFactory,
    FeatureTagFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    TagFactory,
    UserFactory,
    make_token,
)

CREATE_URL = "/api/admin/projects/default/features"


def url(name: str, project: str = "default") -> str:
    return f"/api/admin/projects/{project}/features/{name}"


def create(client, body: dict):
    return client.post(CREATE_URL, json.dumps(body), content_type="application/json")


@pytest.fixture
def rich_flag(db):
    """A flag with two environments, strategies (constraints, strategy variants, segments,
    parameters), per-environment variants with payloads and overrides, tags, lifecycle stages,
    a parent and a child."""
    creator = UserFactory(name="Creator", image_url="https://img.example/c.png")
    flag = FeatureFactory(
        name="rich",
        description="A rich flag",
        type="experiment",
        impression_data=True,
        created_by=creator,
    )
    development = FeatureEnvironmentFactory(
        feature=flag,
        environment_id="development",
        enabled=True,
        variants=[
            {
                "name": "blue",
                "weight": 500,
                "weightType": "variable",
                "stickiness": "default",
                "payload": {"type": "json", "value": '{"color": "blue"}'},
                "overrides": [{"contextName": "userId", "values": ["1", "2"]}],
            },
            {"name": "amber", "weight": 500, "weightType": "variable", "stickiness": "default"},
        ],
    )
    FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=False)
    segment = Segment.objects.create(name="beta-users")
    strategy = FeatureStrategyFactory(
        feature_environment=development,
        name="flexibleRollout",
        title="Half",
        sort_order=1,
        parameters={"rollout": "50", "stickiness": "default", "groupId": "rich"},
        constraints=[
            {
                "contextName": "appName",
                "operator": "IN",
                "values": ["web"],
                "caseInsensitive": False,
                "inverted": False,
            }
        ],
        variants=[
            {"name": "v1", "weight": 1000, "weightType": "variable", "stickiness": "default"}
        ],
    )
    FeatureStrategySegment.objects.create(strategy=strategy, segment=segment)
    disabled = FeatureStrategyFactory(
        feature_environment=development, name="default", sort_order=2, disabled=True
    )
    FeatureTagFactory(feature=flag, tag=TagFactory(value="team-red"))
    FeatureLifecycleStageFactory(
        feature=flag, stage="initial", entered_at=timezone.now() - timedelta(days=2)
    )
    live = FeatureLifecycleStageFactory(feature=flag, stage="live", entered_at=timezone.now())
    parent = FeatureFactory(name="rich-parent")
    FeatureDependencyFactory(parent=parent, child=flag, enabled=True, variants=["on"])
    FeatureDependencyFactory(parent=flag, child=FeatureFactory(name="rich-child"))
    AuditEventFactory(type="feature-created", feature_name="rich", created_by_user_id=creator.pk)
    return {
        "flag": flag,
        "creator": creator,
        "segment": segment,
        "strategy": strategy,
        "disabled": disabled,
        "live": live,
    }


# --- GET ------------------------------------------------------------------------------------


def test_get_feature__after_create__same_body_as_create(admin_client):
    created = create(
        admin_client, {"name": "round.trip", "tags": [{"type": "simple", "value": "tt"}]}
    )

    response = admin_client.get(url("round.trip"))

    assert response.status_code == 200
    assert response.json() == created.json()


def test_get_feature__rich_flag__whole_body(admin_client, rich_flag):
    creator = rich_flag["creator"]
    strategy = rich_flag["strategy"]

    response = admin_client.get(url("rich"))

    assert response.status_code == 200, response.content
    body = response.json()
    blue = {
        "name": "blue",
        "weight": 500.0,
        "weightType": "variable",
        "stickiness": "default",
        "payload": {"type": "json", "value": '{"color": "blue"}'},
        "overrides": [{"contextName": "userId", "values": ["1", "2"]}],
    }
    amber = {"name": "amber", "weight": 500.0, "weightType": "variable", "stickiness": "default"}
    creator_json = {"id": creator.pk, "name": "Creator", "imageUrl": "https://img.example/c.png"}
    assert body == {
        "name": "rich",
        "type": "experiment",
        "description": "A rich flag",
        "project": "default",
        "enabled": True,
        "stale": False,
        "favorite": False,
        "impressionData": True,
        "archived": False,
        "archivedAt": None,
        "createdAt": body["createdAt"],
        "createdBy": creator_json,
        "lastSeenAt": None,
        "environments": [
            {
                "name": "development",
                "featureName": "rich",
                "environment": "development",
                "type": "development",
                "enabled": True,
                "sortOrder": 100,
                "variantCount": 2,
                "strategies": [
                    {
                        "id": str(strategy.id),
                        "name": "flexibleRollout",
                        "title": "Half",
                        "disabled": False,
                        "featureName": "rich",
                        "sortOrder": 1,
                        "segments": [rich_flag["segment"].pk],
                        "constraints": [
                            {
                                "contextName": "appName",
                                "operator": "IN",
                                "values": ["web"],
                                "caseInsensitive": False,
                                "inverted": False,
                            }
                        ],
                        "variants": [
                            {
                                "name": "v1",
                                "weight": 1000,
                                "weightType": "variable",
                                "stickiness": "default",
                            }
                        ],
                        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "rich"},
                    },
                    {
                        "id": str(rich_flag["disabled"].id),
                        "name": "default",
                        "title": None,
                        "disabled": True,
                        "featureName": "rich",
                        "sortOrder": 2,
                        "segments": [],
                        "constraints": [],
                        "variants": [],
                        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "g"},
                    },
                ],
                "variants": [amber, blue],
                "lastSeenAt": None,
                "hasStrategies": True,
                "hasEnabledStrategies": True,
            },
            {
                "name": "production",
                "featureName": "rich",
                "environment": "production",
                "type": "production",
                "enabled": False,
                "sortOrder": 200,
                "variantCount": 0,
                "strategies": [],
                "variants": [],
                "lastSeenAt": None,
                "hasStrategies": False,
                "hasEnabledStrategies": False,
            },
        ],
        "variants": [amber, blue],
        "tags": [{"type": "simple", "value": "team-red"}],
        "children": ["rich-child"],
        "lifecycle": {
            "stage": "live",
            "enteredStageAt": rich_flag["live"].entered_at.isoformat().replace("+00:00", "Z"),
        },
        "dependencies": [{"feature": "rich-parent", "enabled": True, "variants": ["on"]}],
        "collaborators": {"users": [creator_json]},
    }


def test_get_feature__favorite_of_the_calling_user(viewer_client, rich_flag):
    FavoriteFeature.objects.create(user=viewer_client.user, feature=rich_flag["flag"])

    assert viewer_client.get(url("rich")).json()["favorite"] is True


def test_get_feature__favorite_of_another_user__false(viewer_client, rich_flag):
    FavoriteFeature.objects.create(user=UserFactory(), feature=rich_flag["flag"])

    assert viewer_client.get(url("rich")).json()["favorite"] is False


def test_get_feature__collaborators__most_recent_change_first(admin_client):
    flag = FeatureFactory(name="shared")
    first, second = UserFactory(), UserFactory()
    now = timezone.now()
    AuditEventFactory(feature_name="shared", created_by_user_id=first.pk, created_at=now)
    AuditEventFactory(
        feature_name="shared", created_by_user_id=second.pk, created_at=now - timedelta(hours=1)
    )
    AuditEventFactory(feature_name="other", created_by_user_id=UserFactory().pk, created_at=now)

    users = admin_client.get(url(flag.name)).json()["collaborators"]["users"]

    assert [user["id"] for user in users] == [first.pk, second.pk]


def test_get_feature__no_lifecycle_stage__null(admin_client):
    FeatureFactory(name="legacy")

    assert admin_client.get(url("legacy")).json()["lifecycle"] is None


def test_get_feature__punctuation_in_name(admin_client):
    create(admin_client, {"name": "it's-(ok)!~*"})

    response = admin_client.get(url("it's-(ok)!~*"))

    assert response.status_code == 200
    assert response.json()["name"] == "it's-(ok)!~*"


def test_get_feature__percent_encoded_name(admin_client):
    create(admin_client, {"name": "it's-(ok)"})

    response = admin_client.get(url("it%27s-%28ok%29"))

    assert response.status_code == 200
    assert response.json()["name"] == "it's-(ok)"


@pytest.mark.parametrize("environments", [1, 5])
def test_get_feature__query_count_is_constant(
    admin_client, django_assert_num_queries, environments
):
    for number in range(environments - 2):
        Environment.objects.create(name=f"env-{number}", type="test", sort_order=300 + number)
    project = ProjectFactory()
    flag = FeatureFactory(name="counted", project_id=project.id)
    for env in Environment.objects.all()[:environments]:
        feature_env = FeatureEnvironmentFactory(feature=flag, environment_id=env.name)
        for _ in range(3):
            strategy = FeatureStrategyFactory(feature_environment=feature_env)
            FeatureStrategySegment.objects.create(
                strategy=strategy, segment=Segment.objects.create(name=str(uuid.uuid4()))
            )
    for _ in range(environments):
        FeatureTagFactory(feature=flag)
    admin_client.get(url("counted", project.id))  # records the token's first use

    # token, flag (with creator and favorite), environments, strategies, segments, tags,
    # lifecycle stages, dependencies, dependents, collaborators.
    with django_assert_num_queries(10):
        response = admin_client.get(url("counted", project.id))

    assert response.status_code == 200
    assert len(response.json()["environments"]) == environments


def test_get_feature__unknown_flag__404(admin_client):
    error = assert_error(admin_client.get(url("missing")), 404, "NotFoundError")

    assert error["message"] == 'There\'s no feature named "missing" in project "default".'


def test_get_feature__flag_of_another_project__404(admin_client):
    other = ProjectFactory(id="other")
    FeatureFactory(name="theirs", project_id=other.id)

    error = assert_error(admin_client.get(url("theirs")), 404, "NotFoundError")

    assert error["message"] == (
        'There\'s no feature named "theirs" in project "default", but there\'s a feature '
        'with that name in project "other"'
    )


def test_get_feature__archived_flag__404(admin_client):
    FeatureFactory(name="gone", archived_at=timezone.now())

    error = assert_error(admin_client.get(url("gone")), 404, "NotFoundError")

    assert error["message"] == "Could not find feature toggle with name gone"


def test_get_feature__unknown_project__404(admin_client):
    assert_error(admin_client.get(url("x", "nope")), 404, "NotFoundError")


def test_get_feature__anonymous__401(anon_client, db):
    assert_error(anon_client.get(url("x")), 401, "AuthenticationRequired")


def test_get_feature__client_token__403(client_token_client):
    FeatureFactory(name="sdk")

    assert_error(client_token_client.get(url("sdk")), 403, "NoAccessError")


def test_get_feature__viewer__200(viewer_client):
    FeatureFactory(name="visible")

    assert viewer_client.get(url("visible")).status_code == 200


def test_get_feature__post__405(admin_client):
    # PUT and PATCH change the flag (tests/features/test_flag_metadata.py); POST is no
    # operation here.
    FeatureFactory(name="fixed")

    response = admin_client.post(url("fixed"), "{}", content_type="application/json")

    assert_error(response, 405, "MethodNotAllowedError")


# --- DELETE (archive) ----------------------------------------------------------------------


def test_archive_feature__202_name_stays_taken(admin_client):
    create(admin_client, {"name": "to.archive", "tags": [{"type": "simple", "value": "t9"}]})

    response = admin_client.delete(url("to.archive"))

    assert response.status_code == 202
    flag = Feature.objects.get(name="to.archive")
    assert flag.archived_at is not None
    assert flag.archived is True
    assert_error(admin_client.get(url("to.archive")), 404, "NotFoundError")
    error = assert_error(create(admin_client, {"name": "to.archive"}), 409, "NameExistsError")
    assert error["message"] == "An archived flag with that name already exists"


def test_archive_feature__lifecycle_archived_and_audit_event(admin_client):
    create(admin_client, {"name": "audited.archive", "tags": [{"type": "simple", "value": "t9"}]})

    admin_client.delete(url("audited.archive"))

    stage = FeatureLifecycleStage.objects.get(feature_id="audited.archive", stage="archived")
    assert stage.entered_at == Feature.objects.get(name="audited.archive").archived_at
    event = AuditEvent.objects.get(feature_name="audited.archive", type="feature-archived")
    assert (event.created_by, event.created_by_user_id, event.project) == (
        "admin-tok",
        -42,
        "default",
    )
    assert event.tags == [{"type": "simple", "value": "t9"}]


def test_archive_feature__removes_its_own_dependencies(admin_client):
    child = FeatureFactory(name="child")
    FeatureDependencyFactory(parent=FeatureFactory(name="parent"), child=child)

    admin_client.delete(url("child"))

    assert not FeatureDependency.objects.filter(child=child).exists()


def test_archive_feature__twice__202_one_event(admin_client):
    FeatureFactory(name="twice.archived")

    assert admin_client.delete(url("twice.archived")).status_code == 202
    assert admin_client.delete(url("twice.archived")).status_code == 202

    assert AuditEvent.objects.filter(feature_name="twice.archived").count() == 1


def test_archive_feature__unknown__404(admin_client):
    assert_error(admin_client.delete(url("missing")), 404, "NotFoundError")


def test_archive_feature__other_project__404(admin_client):
    FeatureFactory(name="theirs", project_id=ProjectFactory().id)

    assert_error(admin_client.delete(url("theirs")), 404, "NotFoundError")
    assert Feature.objects.get(name="theirs").archived_at is None


def test_archive_feature__anonymous__401(anon_client, db):
    assert_error(anon_client.delete(url("x")), 401, "AuthenticationRequired")


def test_archive_feature__viewer__403(viewer_client):
    FeatureFactory(name="kept")

    error = assert_error(viewer_client.delete(url("kept")), 403, "NoAccessError")

    assert error["permissions"] == ["DELETE_FEATURE"]
    assert Feature.objects.get(name="kept").archived_at is None


def test_archive_feature__client_token__403(client_token_client):
    FeatureFactory(name="kept")

    assert_error(client_token_client.delete(url("kept")), 403, "NoAccessError")


def test_archive_feature__editor__202(editor_client):
    FeatureFactory(name="edited")

    assert editor_client.delete(url("edited")).status_code == 202


def test_archive_feature__project_member__own_project_only(db):
    from rest_framework.test import APIClient

    project, other = ProjectFactory(), ProjectFactory()
    FeatureFactory(name="mine", project_id=project.id)
    FeatureFactory(name="not.mine", project_id=other.id)
    user = UserFactory(root_role_id=Role.VIEWER)
    ProjectRoleAssignmentFactory(project=project, user=user, role_id=Role.MEMBER)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.PERSONAL, user=user)[1])

    assert client.delete(url("mine", project.id)).status_code == 202
    assert_error(client.delete(url("not.mine", other.id)), 403, "NoAccessError")
