"""A flag's dependencies over HTTP: addFeatureDependency, deleteFeatureDependency,
deleteFeatureDependencies, answered as Unleash 8.2 answers them (its messages, measured)."""

from __future__ import annotations

import json

import pytest

from features.models import FeatureDependency
from flagadmin.core.models import AuditEvent
from tests.conftest import assert_error
from tests.factories import ProjectFactory

FEATURES = "/api/admin/projects/default/features"


def post(client, url: str, body):
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def flags(admin_client) -> None:
    for name in ("parent", "child", "other"):
        assert post(admin_client, FEATURES, {"name": name}).status_code == 201


def _dependencies() -> list[tuple]:
    return list(
        FeatureDependency.objects.values_list("child_id", "parent_id", "enabled", "variants")
    )


def test_add__200_no_body_stored_event_and_client_payload(admin_client, flags):
    response = post(
        admin_client,
        f"{FEATURES}/child/dependencies",
        {"feature": "parent", "variants": ["blue"]},
    )

    assert response.status_code == 200
    assert response.content == b""
    assert _dependencies() == [("child", "parent", True, ["blue"])]
    event = AuditEvent.objects.get(type="feature-dependency-added")
    assert (event.project, event.feature_name, event.data) == (
        "default",
        "child",
        {"feature": "parent", "enabled": True, "variants": ["blue"]},
    )
    detail = admin_client.get(f"{FEATURES}/child").json()
    assert detail["dependencies"] == [{"feature": "parent", "enabled": True, "variants": ["blue"]}]
    assert admin_client.get(f"{FEATURES}/parent").json()["children"] == ["child"]


def test_add__again__changes_how(admin_client, flags):
    post(admin_client, f"{FEATURES}/child/dependencies", {"feature": "parent"})

    post(admin_client, f"{FEATURES}/child/dependencies", {"feature": "parent", "enabled": False})

    assert _dependencies() == [("child", "parent", False, [])]


def test_add__disabled_parent_drops_variants(admin_client, flags):
    body = {"feature": "parent", "enabled": False, "variants": ["blue"]}

    post(admin_client, f"{FEATURES}/child/dependencies", body)

    assert _dependencies() == [("child", "parent", False, [])]


@pytest.mark.parametrize(
    ("setup", "body", "status", "name", "message"),
    [
        pytest.param(
            None,
            {"feature": "child"},
            403,
            "InvalidOperationError",
            "A feature flag cannot depend on itself.",
            id="itself",
        ),
        pytest.param(
            ("other", "child"),
            {"feature": "parent"},
            403,
            "InvalidOperationError",
            "Transitive dependency detected. Cannot add a dependency to the feature that other "
            "features depend on.",
            id="child-is-a-parent",
        ),
        pytest.param(
            ("parent", "other"),
            {"feature": "parent"},
            403,
            "InvalidOperationError",
            "Transitive dependency detected. Cannot add a dependency to the feature that has "
            "parent dependency.",
            id="parent-is-a-child",
        ),
        pytest.param(
            None,
            {"feature": "nope"},
            403,
            "InvalidOperationError",
            "No active feature nope exists",
            id="no-parent",
        ),
        pytest.param(
            "elsewhere",
            {"feature": "elsewhere-flag"},
            404,
            "NotFoundError",
            "Cannot add the dependency. Both the parent and the child feature must belong to "
            'project "default".',
            id="parent-in-another-project",
        ),
    ],
)
def test_add__refused_as_unleash__nothing_stored(
    admin_client, flags, setup, body, status, name, message
):
    if setup == "elsewhere":
        ProjectFactory(id="elsewhere")
        post(admin_client, "/api/admin/projects/elsewhere/features", {"name": "elsewhere-flag"})
    elif setup is not None:
        FeatureDependency.objects.create(child_id=setup[0], parent_id=setup[1])
    before = _dependencies()

    response = post(admin_client, f"{FEATURES}/child/dependencies", body)

    error = assert_error(response, status, name)
    assert error["message"] == message
    assert _dependencies() == before
    assert not AuditEvent.objects.filter(type="feature-dependency-added").exists()


def test_add__archived_parent__403(admin_client, flags):
    admin_client.delete(f"{FEATURES}/parent")

    response = post(admin_client, f"{FEATURES}/child/dependencies", {"feature": "parent"})

    assert assert_error(response, 403, "InvalidOperationError")["message"] == (
        "No active feature parent exists"
    )


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="no-feature"),
        pytest.param({"feature": 5}, id="feature-not-string"),
        pytest.param({"feature": "parent", "enabled": "yes"}, id="enabled-not-boolean"),
        pytest.param({"feature": "parent", "variants": [1]}, id="variant-not-string"),
    ],
)
def test_add__invalid_body__400(admin_client, flags, body):
    assert_error(post(admin_client, f"{FEATURES}/child/dependencies", body), 400, "ValidationError")


def test_add__viewer__403(viewer_client, flags):
    response = post(viewer_client, f"{FEATURES}/child/dependencies", {"feature": "parent"})

    assert_error(response, 403, "NoAccessError")


def test_delete_one__200_event(admin_client, flags):
    post(admin_client, f"{FEATURES}/child/dependencies", {"feature": "parent"})

    response = admin_client.delete(f"{FEATURES}/child/dependencies/parent")

    assert response.status_code == 200
    assert _dependencies() == []
    event = AuditEvent.objects.get(type="feature-dependency-removed")
    assert (event.feature_name, event.data) == ("child", {"feature": "parent"})


def test_delete_one__none__404(admin_client, flags):
    response = admin_client.delete(f"{FEATURES}/child/dependencies/parent")

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'No dependency on "parent" for feature "child" in project "default".'
    )


def test_delete_all__200_one_event(admin_client, flags):
    post(admin_client, f"{FEATURES}/child/dependencies", {"feature": "parent"})
    post(admin_client, f"{FEATURES}/child/dependencies", {"feature": "other"})

    response = admin_client.delete(f"{FEATURES}/child/dependencies")

    assert response.status_code == 200
    assert _dependencies() == []
    assert AuditEvent.objects.filter(type="feature-dependencies-removed").count() == 1


def test_delete_all__none__404(admin_client, flags):
    response = admin_client.delete(f"{FEATURES}/child/dependencies")

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'Feature "child" has no dependencies to remove in project "default".'
    )
