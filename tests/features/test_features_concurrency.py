"""Concurrent creations of one flag name: exactly one 201, the others 409, never a 500.

Real threads, each with its own database connection, against the whole stack (authentication,
view, service, database), on whichever database DATABASE_URL selects (SQLite or PostgreSQL).
"""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from features.models import Feature, FeatureEnvironment, FeatureLifecycleStage, Tag
from features.services import create_feature
from flagadmin.api.principals import TokenPrincipal
from flagadmin.core.errors import NameExistsError
from flagadmin.core.models import AuditEvent, TokenType
from projects.models import Project
from tests.concurrency import concurrent_db, run_together
from tests.factories import make_token

URL = "/api/admin/projects/default/features"


pytestmark = pytest.mark.usefixtures("seeded_rows_back_after_module")


@concurrent_db
@pytest.mark.parametrize("attempt", range(3))
def test_create_feature__concurrent_requests_same_name__one_201_rest_409(attempt):
    token = make_token(TokenType.ADMIN, name="admin-tok")[1]
    name = f"race-{attempt}"

    def create(index: int):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        return client.post(URL, json.dumps({"name": name}), content_type="application/json")

    responses = run_together(4, create)

    statuses = sorted(getattr(r, "status_code", repr(r)) for r in responses)
    assert statuses == [201, 409, 409, 409], [getattr(r, "content", r) for r in responses]
    for response in responses:
        if response.status_code == 409:
            body = response.json()
            assert body["name"] == "NameExistsError"
            assert body["message"] == "A flag with that name already exists"
    assert Feature.objects.filter(name=name).count() == 1
    assert FeatureEnvironment.objects.filter(feature_id=name).count() == 2
    assert FeatureLifecycleStage.objects.filter(feature_id=name).count() == 1
    assert AuditEvent.objects.filter(feature_name=name, type="feature-created").count() == 1


@concurrent_db
def test_create_feature_service__concurrent_same_name__one_created_one_name_exists():
    project = Project.objects.get(pk="default")
    actor = TokenPrincipal(make_token(TokenType.ADMIN, name="admin-tok")[0])
    name = "service-race"

    def create(index: int):
        return create_feature(
            project_id=project.pk, name=name, tags=[("simple", "shared-new")], actor=actor
        )

    results = run_together(2, create)

    created = [r for r in results if isinstance(r, Feature)]
    refused = [r for r in results if isinstance(r, NameExistsError)]
    assert (len(created), len(refused)) == (1, 1), results
    assert refused[0].message == "A flag with that name already exists"
    assert Feature.objects.filter(name=name).count() == 1
    assert Tag.objects.filter(value="shared-new").count() == 1


@concurrent_db
def test_create_feature__concurrent_different_names_sharing_a_new_tag__all_201():
    token = make_token(TokenType.ADMIN, name="admin-tok")[1]
    tag = {"type": "simple", "value": "brand-new"}

    def create(index: int):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        body = {"name": f"tagged-{index}", "tags": [tag]}
        return client.post(URL, json.dumps(body), content_type="application/json")

    responses = run_together(4, create)

    assert [getattr(r, "status_code", r) for r in responses] == [201] * 4
    assert Tag.objects.filter(value=tag["value"]).count() == 1
    assert Feature.objects.filter(tags__value=tag["value"]).count() == 4
