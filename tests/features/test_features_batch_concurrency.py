"""Batch archive and revive of flags under concurrent writers: every request answers as it
would alone (no deadlock surfacing as 503), and the kept figures equal a recount after."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from features import project_stats
from features.models import Feature
from flagadmin.core.models import TokenType
from tests.concurrency import concurrent_db, run_together
from tests.factories import FeatureFactory, ProjectFactory, make_token

TYPES = ["release", "experiment", "operational", "kill-switch", "permission"]


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("seed", [1, 2])
def test_batch_archive_and_revive__concurrent_overlapping_batches__none_fails(seed):
    ProjectFactory(id="busy")
    rng = random.Random(seed)
    now = timezone.now()
    # Flags of every type, stale or not, created on different days: each flag's write moves
    # different kept count and day rows, in an order that differs from batch to batch.
    names = [f"f{index:02d}" for index in range(24)]
    for name in names:
        FeatureFactory(
            project_id="busy",
            name=name,
            type=rng.choice(TYPES),
            stale=rng.random() < 0.3,
            created_at=now - timedelta(days=rng.randrange(60)),
        )
    token = make_token(TokenType.ADMIN, name="batches")[1]

    def work(index: int) -> list[str]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        thread_rng = random.Random(seed * 100 + index)
        problems = []
        for step in range(12):
            action = thread_rng.choice(["archive", "revive", "create"])
            if action == "create":
                response = client.post(
                    "/api/admin/projects/busy/features",
                    json.dumps({"name": f"new-{index}-{step}", "type": thread_rng.choice(TYPES)}),
                    content_type="application/json",
                )
                expected = 201
            else:
                batch = thread_rng.sample(names, 8)
                response = client.post(
                    f"/api/admin/projects/busy/{action}",
                    json.dumps({"features": batch}),
                    content_type="application/json",
                )
                expected = 202 if action == "archive" else 200
            if response.status_code != expected:
                problems.append(f"{action}: {response.status_code} {response.content[:200]!r}")
        return problems

    results = run_together(6, work)

    assert results == [[]] * 6
    assert Feature.objects.filter(project_id="busy").count() > len(names)
    assert project_stats.stored() == project_stats.recounted()
    assert project_stats.stored_days() == project_stats.recounted_days()
    assert project_stats.stored_activity() == project_stats.recomputed_activity()
