"""GET /api/admin/projects as a server runs it (outside any transaction: the list opens its own,
on PostgreSQL a REPEATABLE READ, READ ONLY one) and inside a caller's transaction: every read
shows every write committed before it, or made before it in the same transaction."""

from __future__ import annotations

import json

import pytest
from django.db import transaction

from features.models import Feature
from tests.concurrency import concurrent_db
from tests.factories import FeatureFactory, ProjectFactory
from tests.overview.test_projects_list import listed

CREATE_URL = "/api/admin/projects/{}/features"


def create_flag(client, project: str, name: str) -> None:
    response = client.post(
        CREATE_URL.format(project), json.dumps({"name": name}), content_type="application/json"
    )
    assert response.status_code == 201, response.content


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_list_projects__committed_writes_between_reads__each_read_shows_them(admin_client):
    ProjectFactory(id="committed")
    first = listed(admin_client)["committed"]

    create_flag(admin_client, "committed", "one")
    second = listed(admin_client)["committed"]
    Feature.objects.filter(name="one").update(stale=True)
    third = listed(admin_client)["committed"]

    assert (first["featureCount"], first["lastUpdatedAt"]) == (0, None)
    assert (second["featureCount"], second["staleFeatureCount"]) == (1, 0)
    assert second["lastUpdatedAt"] is not None
    assert (third["featureCount"], third["staleFeatureCount"], third["health"]) == (1, 1, 0)


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_list_projects__list_create_list_in_one_transaction__second_list_sees_the_flag(
    admin_client,
):
    ProjectFactory(id="atomic")
    FeatureFactory(project_id="atomic")

    with transaction.atomic():
        before = listed(admin_client)["atomic"]["featureCount"]
        create_flag(admin_client, "atomic", "inside")
        after = listed(admin_client)["atomic"]["featureCount"]

    assert (before, after) == (1, 2)
