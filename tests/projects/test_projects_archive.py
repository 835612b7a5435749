"""Archiving a project while it has active flags is refused, as Unleash 8.2's archiveProject
refuses it (403 InvalidOperationError), through the API and the Django admin; nothing is
written. Open-source Unleash 8.2 does not route project archive (404), so the status and the
message are its source's (project-service.js, invalid-operation-error.js)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from flagadmin.core.models import AuditEvent, Role
from projects.models import Project
from tests.admin_forms import change_form_data
from tests.conftest import assert_error
from tests.factories import FeatureFactory, ProjectFactory, UserFactory

URL = "/api/admin/projects"
MESSAGE = "You can not archive a project with active feature flags"


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.ADMIN))
    return client


def test_archive_project__active_flag__403_and_nothing_written(admin_client):
    ProjectFactory(id="shop")
    FeatureFactory(project_id="shop")

    response = admin_client.post(f"{URL}/archive/shop", {}, format="json")

    error = assert_error(response, 403, "InvalidOperationError")
    assert error == {"id": error["id"], "name": "InvalidOperationError", "message": MESSAGE}
    assert Project.objects.get(pk="shop").archived_at is None
    assert not AuditEvent.objects.filter(type="project-archived").exists()


def test_archive_project__only_archived_flags__200(admin_client):
    ProjectFactory(id="shop")
    FeatureFactory(project_id="shop", archived_at=timezone.now())

    response = admin_client.post(f"{URL}/archive/shop", {}, format="json")

    assert response.status_code == 200, response.content
    assert Project.objects.get(pk="shop").archived_at is not None


def test_archive_project__flag_archived_through_the_api_first__200(admin_client):
    ProjectFactory(id="shop")
    FeatureFactory(name="checkout", project_id="shop")
    assert admin_client.post(f"{URL}/archive/shop", {}, format="json").status_code == 403

    assert admin_client.delete(f"{URL}/shop/features/checkout").status_code == 202
    response = admin_client.post(f"{URL}/archive/shop", {}, format="json")

    assert response.status_code == 200, response.content


def test_admin_archive_project__active_flag__form_error_and_not_archived(staff):
    ProjectFactory(id="shop")
    FeatureFactory(project_id="shop")
    url = "/admin/projects/project/shop/change/"
    data = change_form_data(staff.get(url))
    data["archived_at_0"] = "2026-01-01"
    data["archived_at_1"] = "10:00:00"

    response = staff.post(url, data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"archived_at": [MESSAGE]}
    assert Project.objects.get(pk="shop").archived_at is None
    assert not AuditEvent.objects.filter(type="project-updated").exists()


def test_admin_archive_project__no_active_flag__archived(staff):
    ProjectFactory(id="shop")
    url = "/admin/projects/project/shop/change/"
    data = change_form_data(staff.get(url))
    data["archived_at_0"] = "2026-01-01"
    data["archived_at_1"] = "10:00:00"

    response = staff.post(url, data)

    assert response.status_code == 302, (
        response.context and response.context["adminform"].form.errors
    )
    assert Project.objects.get(pk="shop").archived_at is not None
