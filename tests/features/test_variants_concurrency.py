"""Concurrent writes of a flag's environment variants: patches computed from what is stored,
under the flag environment's lock, so none is lost; batches over the same environments in
different orders neither deadlock nor fail. Real threads, each with its own connection, through
the whole stack, on whichever database DATABASE_URL selects."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from features.models import FeatureEnvironment
from flagadmin.core.models import AuditEvent, TokenType
from tests.concurrency import concurrent_db, run_together
from tests.factories import make_token

pytestmark = pytest.mark.usefixtures("seeded_rows_back_after_module")

FEATURES = "/api/admin/projects/default/features"
FLAG = "race-paint"


def admin() -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.ADMIN, name="admin-tok")[1])
    return client


def send(client: APIClient, method: str, url: str, body):
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def flag_with_variants() -> None:
    client = admin()
    assert send(client, "post", FEATURES, {"name": FLAG}).status_code == 201
    body = {"variants": [{"name": "base", "weight": 0}], "environments": ["development"]}
    assert send(client, "put", f"{FEATURES}/{FLAG}/variants-batch", body).status_code == 200


@concurrent_db
def test_patch__concurrent_additions__none_lost(flag_with_variants):
    url = f"{FEATURES}/{FLAG}/environments/development/variants"

    def add(index: int):
        value = {"name": f"v{index}", "weight": 0, "weightType": "variable"}
        return send(admin(), "patch", url, [{"op": "add", "path": "/-", "value": value}])

    responses = run_together(4, add)

    assert [getattr(r, "status_code", repr(r)) for r in responses] == [200] * 4
    stored = FeatureEnvironment.objects.get(feature_id=FLAG, environment_id="development")
    assert sorted(v["name"] for v in stored.variants) == ["base", "v0", "v1", "v2", "v3"]
    assert sum(v["weight"] for v in stored.variants) == 1000
    events = AuditEvent.objects.filter(type="feature-environment-variants-updated")
    assert events.count() == 1 + 4


@concurrent_db
def test_batch__same_environments_other_orders__all_200(flag_with_variants):
    orders = [["development", "production"], ["production", "development"]] * 2

    def push(index: int):
        body = {"variants": [{"name": f"b{index}", "weight": 0}], "environments": orders[index]}
        return send(admin(), "put", f"{FEATURES}/{FLAG}/variants-batch", body)

    responses = run_together(4, push)

    assert [getattr(r, "status_code", repr(r)) for r in responses] == [200] * 4
    development, production = (
        FeatureEnvironment.objects.get(feature_id=FLAG, environment_id=name).variants
        for name in ("development", "production")
    )
    # One batch was the last to write both: the same variants in each.
    assert development == production
