"""Every kind of flag write at once, from several threads, on two projects: creations, single
and batch archives and revives, environment switches, strategies, and SDK usage reports that
touch flags of both projects. No request fails for another (no 500, no 503: a deadlock or a
lock wait past the statement timeout would be one), and the kept figures equal a recount."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from features import project_stats
from features.models import Feature
from flagadmin.models import TokenType
from tests.concurrency import concurrent_db, run_together
from tests.factories import ProjectFactory, make_token

TYPES = ["release", "experiment", "operational", "kill-switch", "permission"]
PROJECTS = ["left", "right"]


def body(value: dict) -> dict:
    return {"data": json.dumps(value), "content_type": "application/json"}


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("seed", [1, 2])
def test_write_mix__concurrent_writers__no_request_fails(settings, seed):
    settings.LAST_SEEN_RESOLUTION = 0  # every usage report writes last_seen
    rng = random.Random(seed)
    now = timezone.now()
    admin = make_token(TokenType.ADMIN, name="writers")[1]
    client_token = make_token(TokenType.CLIENT, projects=["*"], environment="development")[1]
    setup = APIClient()
    setup.credentials(HTTP_AUTHORIZATION=admin)
    names: dict[str, list[str]] = {project: [] for project in PROJECTS}
    for project in PROJECTS:
        ProjectFactory(id=project)
        for index in range(12):
            name = f"{project}-{index:02d}"
            # Created as the API creates them (with their environments), then of any age and
            # state: each flag's writes move different count and day rows.
            created = setup.post(
                f"/api/admin/projects/{project}/features",
                **body({"name": name, "type": rng.choice(TYPES)}),
            )
            assert created.status_code == 201, created.content
            Feature.objects.filter(name=name).update(
                stale=rng.random() < 0.3, created_at=now - timedelta(days=rng.randrange(60))
            )
            names[project].append(name)

    def work(index: int) -> list[str]:
        client, sdk = APIClient(), APIClient()
        client.credentials(HTTP_AUTHORIZATION=admin)
        sdk.credentials(HTTP_AUTHORIZATION=client_token)
        thread_rng = random.Random(seed * 100 + index)
        problems = []
        for step in range(15):
            project = thread_rng.choice(PROJECTS)
            flag = thread_rng.choice(names[project])
            base = f"/api/admin/projects/{project}"
            action = thread_rng.choice(
                ["create", "archive-one", "archive", "revive", "switch", "strategy", "usage"]
            )
            if action == "create":
                response = client.post(
                    f"{base}/features",
                    **body({"name": f"new-{index}-{step}", "type": thread_rng.choice(TYPES)}),
                )
            elif action == "archive-one":
                response = client.delete(f"{base}/features/{flag}")
            elif action in ("archive", "revive"):
                batch = thread_rng.sample(names[project], 6)
                response = client.post(f"{base}/{action}", **body({"features": batch}))
            elif action == "switch":
                state = thread_rng.choice(["on", "off"])
                response = client.post(
                    f"{base}/features/{flag}/environments/development/{state}", **body({})
                )
            elif action == "strategy":
                response = client.post(
                    f"{base}/features/{flag}/environments/development/strategies",
                    **body({"name": "default"}),
                )
            else:
                toggles = {
                    name: {"yes": 1, "no": 0}
                    for name in thread_rng.sample(names["left"] + names["right"], 8)
                }
                response = sdk.post(
                    "/api/client/metrics",
                    **body(
                        {
                            "appName": "shop",
                            "instanceId": f"shop-{index}",
                            "bucket": {
                                "start": "2026-11-23T09:00:00Z",
                                "stop": "2026-11-23T09:01:00Z",
                                "toggles": toggles,
                            },
                        }
                    ),
                )
            if response.status_code >= 500:
                problems.append(f"{action}: {response.status_code} {response.content[:160]!r}")
        return problems

    results = run_together(6, work)

    assert results == [[]] * 6
    assert Feature.objects.filter(project_id__in=PROJECTS).count() >= 24
    assert project_stats.stored() == project_stats.recounted()
    assert project_stats.stored_days() == project_stats.recounted_days()
    assert project_stats.stored_activity() == project_stats.recomputed_activity()


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["on", "off", "strategies"])
def test_flag_environment_write__locks_the_flags_entry_not_the_environment(admin_client, action):
    # Every creation of a flag takes a key-share lock on each environment's row (its entries'
    # foreign keys): a write that locked the environment's row for update would make all
    # writers in that environment wait on each other, and deadlock with creations.
    if connection.vendor != "postgresql":
        pytest.skip("SQLite locks no rows")
    ProjectFactory(id="locks")
    created = admin_client.post(
        "/api/admin/projects/locks/features", **body({"name": "locked", "type": "release"})
    )
    assert created.status_code == 201, created.content
    url = f"/api/admin/projects/locks/features/locked/environments/development/{action}"

    with CaptureQueriesContext(connection) as queries:
        response = admin_client.post(
            url, **body({"name": "default"} if action == "strategies" else {})
        )

    assert response.status_code == 200, response.content
    locking = [query["sql"] for query in queries if "FOR UPDATE" in query["sql"]]
    assert locking
    assert [sql for sql in locking if "projects_environment" in sql] == []
