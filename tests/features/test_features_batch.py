"""POST /api/admin/projects/:projectId/archive, /revive and /delete with `{"features": [...]}`:
archiveFeatures, reviveFeatures and deleteFeatures (Unleash's paths; projects themselves are
archived at /api/admin/projects/archive/:projectId)."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from features.models import Feature, FeatureDependency, FeatureEnvironment, FeatureLifecycleStage
from flagadmin.core.models import AuditEvent
from projects.models import Project
from tests.conftest import assert_error
from tests.factories import ProjectFactory, ProjectRoleAssignmentFactory

FEATURES = "/api/admin/projects/default/features"
ARCHIVE = "/api/admin/projects/default/archive"
REVIVE = "/api/admin/projects/default/revive"
DELETE = "/api/admin/projects/default/delete"


def post(client, url: str, body):
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def flags(admin_client) -> list[str]:
    for name in ("a", "b", "c"):
        assert post(admin_client, FEATURES, {"name": name}).status_code == 201
    return ["a", "b", "c"]


def _archived() -> list[str]:
    return sorted(Feature.objects.filter(archived_at__isnull=False).values_list("name", flat=True))


def test_archive_features__202_each_archived_with_event(admin_client, flags):
    response = post(admin_client, ARCHIVE, {"features": ["a", "b", "nope"]})

    assert response.status_code == 202
    assert response.content == b""
    assert _archived() == ["a", "b"]
    events = AuditEvent.objects.filter(type="feature-archived").order_by("feature_name")
    assert [e.feature_name for e in events] == ["a", "b"]
    assert Project.objects.get(pk="default").archived_at is None


def test_archive_features__already_archived__no_second_event(admin_client, flags):
    post(admin_client, ARCHIVE, {"features": ["a"]})

    assert post(admin_client, ARCHIVE, {"features": ["a"]}).status_code == 202

    assert AuditEvent.objects.filter(type="feature-archived").count() == 1


def test_archive_features__flag_of_another_project__400_nothing_archived(admin_client, flags):
    ProjectFactory(id="other")
    post(admin_client, "/api/admin/projects/other/features", {"name": "elsewhere"})

    response = post(admin_client, ARCHIVE, {"features": ["a", "elsewhere"]})

    body = assert_error(response, 400, "ValidationError")
    assert body["details"] == [
        {"path": "/body/features", "message": "These flags are not in project default: elsewhere."}
    ]
    assert _archived() == []


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="missing"),
        pytest.param({"features": "a"}, id="not-a-list"),
        pytest.param({"features": [1]}, id="not-strings"),
    ],
)
def test_archive_features__invalid__400(admin_client, flags, body):
    error = assert_error(post(admin_client, ARCHIVE, body), 400, "ValidationError")

    assert error["details"][0]["path"].startswith("/body/features")


def test_archive_features__viewer__403(viewer_client, flags):
    body = assert_error(post(viewer_client, ARCHIVE, {"features": ["a"]}), 403, "NoAccessError")

    assert body["permissions"] == ["DELETE_FEATURE"]


def test_archive_features__member__202(viewer_client, flags):
    ProjectRoleAssignmentFactory(project_id="default", user=viewer_client.user, role_id=5)

    assert post(viewer_client, ARCHIVE, {"features": ["a"]}).status_code == 202


def test_archive_features__anonymous__401(anon_client):
    assert_error(post(anon_client, ARCHIVE, {"features": []}), 401, "AuthenticationRequired")


def test_archive_features__not_json__415(admin_client):
    response = admin_client.generic("POST", ARCHIVE, "{}", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


def test_archive_features__unknown_project__404(admin_client):
    response = post(admin_client, "/api/admin/projects/nope/archive", {"features": []})

    assert_error(response, 404, "NotFoundError")


def test_revive_features__200_active_disabled_event(admin_client, flags):
    admin_client.post(f"{FEATURES}/a/environments/development/on", content_type="application/json")
    post(admin_client, ARCHIVE, {"features": ["a", "b"]})

    response = post(admin_client, REVIVE, {"features": ["a", "c", "nope"]})

    assert response.status_code == 200
    assert _archived() == ["b"]
    assert not FeatureEnvironment.objects.filter(feature_id="a", enabled=True).exists()
    assert not FeatureLifecycleStage.objects.filter(feature_id="a", stage="archived").exists()
    events = AuditEvent.objects.filter(type="feature-revived")
    assert [(e.feature_name, e.project) for e in events] == [("a", "default")]
    assert admin_client.get(f"{FEATURES}/a").status_code == 200


def test_revive_features__viewer__403(viewer_client, admin_client, flags):
    post(admin_client, ARCHIVE, {"features": ["a"]})

    body = assert_error(post(viewer_client, REVIVE, {"features": ["a"]}), 403, "NoAccessError")

    assert body["permissions"] == ["UPDATE_FEATURE"]
    assert _archived() == ["a"]


# --- deleteFeatures ------------------------------------------------------------------------


def _names() -> list[str]:
    return sorted(Feature.objects.values_list("name", flat=True))


def test_delete_features__200_archived_ones_deleted_with_events(admin_client, flags):
    post(admin_client, f"{FEATURES}/a/tags", {"type": "simple", "value": "red"})
    post(admin_client, ARCHIVE, {"features": ["a", "b"]})

    response = post(admin_client, DELETE, {"features": ["a", "b", "c", "nope"]})

    assert response.status_code == 200
    assert response.content == b""
    # `c` is active: skipped, as Unleash skips it; `nope` names nothing.
    assert _names() == ["c"]
    events = AuditEvent.objects.filter(type="feature-deleted").order_by("feature_name")
    assert [(e.feature_name, e.project, e.pre_data["archived"]) for e in events] == [
        ("a", "default", True),
        ("b", "default", True),
    ]
    assert post(admin_client, FEATURES, {"name": "a"}).status_code == 201  # the name is free


def test_delete_features__flag_of_another_project__400_nothing_deleted(admin_client, flags):
    ProjectFactory(id="other")
    post(admin_client, "/api/admin/projects/other/features", {"name": "elsewhere"})
    post(admin_client, "/api/admin/projects/other/archive", {"features": ["elsewhere"]})
    post(admin_client, ARCHIVE, {"features": ["a"]})

    response = post(admin_client, DELETE, {"features": ["a", "elsewhere"]})

    body = assert_error(response, 400, "ValidationError")
    assert body["details"] == [
        {"path": "/body/features", "message": "These flags are not in project default: elsewhere."}
    ]
    assert _names() == ["a", "b", "c", "elsewhere"]


ONE_DEPENDED_ON = "You can not archive/delete this feature since other features depend on it."
SOME_DEPENDED_ON = "You can not archive/delete those features since other features depend on them."


def _refused_with(response, message: str) -> None:
    body = assert_error(response, 403, "InvalidOperationError")
    assert body == {"id": body["id"], "name": "InvalidOperationError", "message": message}


def test_archive_feature__a_parent_of_an_active_flag__403_nothing_archived(admin_client, flags):
    FeatureDependency.objects.create(parent_id="a", child_id="b")

    _refused_with(admin_client.delete(f"{FEATURES}/a"), ONE_DEPENDED_ON)

    assert _archived() == []
    assert FeatureDependency.objects.filter(parent_id="a", child_id="b").exists()


@pytest.mark.parametrize(
    ("listed", "message"),
    [
        pytest.param(["a"], ONE_DEPENDED_ON, id="parent-alone"),
        pytest.param(["a", "c"], SOME_DEPENDED_ON, id="parent-without-its-child"),
    ],
)
def test_archive_features__a_parent_without_its_children__403_nothing_archived(
    admin_client, flags, listed, message
):
    FeatureDependency.objects.create(parent_id="a", child_id="b")

    _refused_with(post(admin_client, ARCHIVE, {"features": listed}), message)

    assert _archived() == []


def test_archive_features__a_parent_with_its_children__202(admin_client, flags):
    FeatureDependency.objects.create(parent_id="a", child_id="b")

    assert post(admin_client, ARCHIVE, {"features": ["a", "b"]}).status_code == 202

    assert _archived() == ["a", "b"]
    assert not FeatureDependency.objects.exists()


def test_delete_features__an_archived_parent_of_an_active_flag__403_nothing_deleted(
    admin_client, flags
):
    # Archiving refuses this state now; rows written before (or by hand) may still hold it.
    Feature.objects.filter(name="a").update(archived_at=timezone.now())
    FeatureDependency.objects.create(parent_id="a", child_id="b")

    # `b` is named but active: skipped, so it would stay without its parent.
    _refused_with(post(admin_client, DELETE, {"features": ["a", "b"]}), SOME_DEPENDED_ON)

    assert _names() == ["a", "b", "c"]
    assert FeatureDependency.objects.filter(parent_id="a", child_id="b").exists()


def test_delete_features__a_parent_archived_with_its_children__200(admin_client, flags):
    FeatureDependency.objects.create(parent_id="a", child_id="b")
    assert post(admin_client, ARCHIVE, {"features": ["a", "b"]}).status_code == 202

    assert post(admin_client, DELETE, {"features": ["a", "b"]}).status_code == 200

    assert _names() == ["c"]


def test_delete_features__viewer__403(viewer_client, admin_client, flags):
    post(admin_client, ARCHIVE, {"features": ["a"]})

    body = assert_error(post(viewer_client, DELETE, {"features": ["a"]}), 403, "NoAccessError")

    assert body["permissions"] == ["DELETE_FEATURE"]
    assert _names() == ["a", "b", "c"]


def test_delete_features__http_delete_method__405(admin_client, flags):
    post(admin_client, ARCHIVE, {"features": ["a"]})

    response = admin_client.delete(
        DELETE, json.dumps({"features": ["a"]}), content_type="application/json"
    )

    assert_error(response, 405, "MethodNotAllowedError")
    assert response["Allow"] == "POST, OPTIONS"
    assert _names() == ["a", "b", "c"]


def test_delete_features__unknown_project__404(admin_client):
    response = post(admin_client, "/api/admin/projects/nope/delete", {"features": []})

    assert_error(response, 404, "NotFoundError")
