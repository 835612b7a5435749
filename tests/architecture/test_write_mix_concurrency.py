"""Every kind of flag write at once, from several threads, on two projects: creations (of new
names and of names deleted before), single and batch archives and revives, deletes, type and
stale changes, dependencies, environment switches, strategies, and SDK usage reports that
touch flags of both projects. No write fails for another (no 500, no 503, no database error: a
deadlock or a lock wait past the statement timeout would be one), every kind of write succeeds
at least once, and the kept figures equal a recount."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.core.exceptions import ObjectDoesNotExist
from django.db import DatabaseError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from features import project_stats
from features.dependency_services import set_feature_dependency
from features.models import Feature
from features.services import delete_archived_feature, update_feature_metadata
from flagadmin.api.principals import TokenPrincipal
from flagadmin.core.errors import InvalidOperationError, NotFoundError
from flagadmin.core.models import Role, TokenType
from tests.concurrency import concurrent_db, run_together
from tests.factories import ProjectFactory, UserFactory, make_token
from tests.statements import trace

TYPES = ["release", "experiment", "operational", "kill-switch", "permission"]
PROJECTS = ["left", "right"]
ACTIONS = [
    *("create", "recreate", "archive-one", "archive", "revive", "delete", "metadata"),
    *("depend", "switch", "strategy", "usage", "admin-page"),
]
ADMIN_INLINES = {
    f"{prefix}-{field}": "0"
    for prefix in ["environments", "feature_tags", "lifecycle_stages", "dependencies"]
    for field in ["TOTAL_FORMS", "INITIAL_FORMS"]
}


def body(value: dict) -> dict:
    return {"data": json.dumps(value), "content_type": "application/json"}


def usage_report(names: list[str], instance: str) -> dict:
    return body(
        {
            "appName": "shop",
            "instanceId": instance,
            "bucket": {
                "start": "2026-11-23T09:00:00Z",
                "stop": "2026-11-23T09:01:00Z",
                "toggles": {name: {"yes": 1, "no": 0} for name in names},
            },
        }
    )


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("seed", [1, 2])
def test_write_mix__concurrent_writers__no_write_fails(settings, seed):
    settings.LAST_SEEN_RESOLUTION = 0  # every usage report writes last_seen
    rng = random.Random(seed)
    now = timezone.now()
    admin_token, admin = make_token(TokenType.ADMIN, name="writers")
    actor = TokenPrincipal(admin_token)
    staff_user = UserFactory(root_role_id=Role.ADMIN)
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
    deleted: dict[str, list[str]] = {project: [] for project in PROJECTS}
    lock = threading.Lock()
    succeeded: Counter[str] = Counter()

    def write(
        action: str, project: str, flag: str, step: int, index: int, client, sdk, staff, pick
    ):
        """One write; True when it wrote, False when there was nothing to write."""
        base = f"/api/admin/projects/{project}"
        if action == "create":
            response = client.post(
                f"{base}/features",
                **body({"name": f"new-{index}-{step}", "type": pick.choice(TYPES)}),
            )
        elif action == "recreate":
            with lock:
                if not deleted[project]:
                    return False
                name = deleted[project].pop()
            response = client.post(f"{base}/features", **body({"name": name}))
        elif action == "archive-one":
            response = client.delete(f"{base}/features/{flag}")
        elif action in ("archive", "revive"):
            batch = pick.sample(names[project], 6)
            response = client.post(f"{base}/{action}", **body({"features": batch}))
        elif action == "switch":
            state = pick.choice(["on", "off"])
            url = f"{base}/features/{flag}/environments/development/{state}"
            response = client.post(url, **body({}))
        elif action == "strategy":
            url = f"{base}/features/{flag}/environments/development/strategies"
            response = client.post(url, **body({"name": "default"}))
        elif action == "admin-page":
            # The Django admin's flag page: metadata and inlines in one transaction.
            response = staff.post(
                f"/admin/features/feature/{flag}/change/",
                {"type": pick.choice(TYPES), "description": f"by {index}", **ADMIN_INLINES},
            )
            if response.status_code >= 500:
                raise AssertionError(f"{response.status_code} {response.content[:160]!r}")
            # 302 when saved; 200 when the form refused it (the flag was deleted meanwhile).
            return response.status_code == 302
        elif action == "usage":
            reported = pick.sample(names["left"] + names["right"], 8)
            response = sdk.post("/api/client/metrics", **usage_report(reported, f"shop-{index}"))
        else:
            # Through the services, as the Django admin writes them.
            feature = Feature.objects.get(name=flag)
            if action == "metadata":
                update_feature_metadata(
                    feature=feature,
                    description=None,
                    type=pick.choice(TYPES),
                    stale=pick.random() < 0.5,
                    impression_data=False,
                    actor=actor,
                )
            elif action == "delete":
                try:
                    delete_archived_feature(feature=feature, actor=actor)
                except ValueError:
                    return False  # not archived, or revived by another thread meanwhile
                except InvalidOperationError:
                    return False  # a flag depends on it (refused as Unleash refuses it)
                with lock:
                    deleted[project].append(flag)
            else:
                # Parents from the first two flags of a project, children from the others:
                # dependencies are one level deep (a chain is refused, as Unleash refuses it).
                parent = Feature.objects.get(name=pick.choice(names[project][:2]))
                if feature.name in names[project][:2]:
                    return False
                try:
                    set_feature_dependency(
                        child=feature, parent=parent, enabled=True, variants=[], actor=actor
                    )
                except (InvalidOperationError, NotFoundError):
                    # An archived parent, a chain, or a flag deleted meanwhile (refused as
                    # Unleash refuses them).
                    return False
            return True
        if response.status_code >= 500:
            raise AssertionError(f"{response.status_code} {response.content[:160]!r}")
        return response.status_code < 300

    def work(index: int) -> list[str]:
        client, sdk, staff = APIClient(), APIClient(), Client()
        client.credentials(HTTP_AUTHORIZATION=admin)
        staff.force_login(staff_user)
        sdk.credentials(HTTP_AUTHORIZATION=client_token)
        thread_rng = random.Random(seed * 100 + index)
        problems = []
        for step in range(18):
            project = thread_rng.choice(PROJECTS)
            flag = thread_rng.choice(names[project])
            action = thread_rng.choice(ACTIONS)
            try:
                wrote = write(action, project, flag, step, index, client, sdk, staff, thread_rng)
            except ObjectDoesNotExist:
                wrote = False  # deleted by another thread meanwhile
            except (AssertionError, DatabaseError) as error:
                problems.append(f"{action}: {error!r}"[:300])
                continue
            if wrote:
                with lock:
                    succeeded[action] += 1
        return problems

    results = run_together(6, work)

    assert results == [[]] * 6
    assert set(succeeded) >= set(ACTIONS) - {"recreate", "delete"}, succeeded
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
    locking = trace(queries).locks()
    assert locking
    assert [table for table, _ in locking if table == "projects_environment"] == []
    # The definitions a strategy names, shared (docs/lock-order.md); nothing else of theirs.
    definitions = [(table, lock) for table, lock in locking if table.startswith("definitions_")]
    assert {lock for _, lock in definitions} <= {"SHARE"}
    assert bool(definitions) == (action == "strategies")
    # NO KEY, as an UPDATE of the entry: the key-share locks of foreign keys to it still pass.
    flag_rows = [(table, lock) for table, lock in locking if (table, lock) not in definitions]
    assert {lock for _, lock in flag_rows} == {"NO KEY UPDATE"}


@pytest.mark.django_db
def test_flag_triggers__activity_fires_after_counts_and_days():
    # PostgreSQL fires the triggers of one event in the order of their names: the activity
    # row is locked last, as every writer of several flags locks it (migration 0013).
    if connection.vendor != "postgresql":
        pytest.skip("SQLite locks no rows")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger"
            " WHERE tgrelid = 'features_feature'::regclass AND NOT tgisinternal"
            " AND tgname LIKE 'features_flag_%%' ORDER BY tgname"
        )
        names = [name for (name,) in cursor.fetchall()]

    kinds = [
        name.removesuffix("_insert").removesuffix("_update").removesuffix("_delete")
        for name in names
    ]
    assert kinds == [
        *["features_flag_count"] * 3,
        *["features_flag_day"] * 3,
        *["features_flag_then_activity"] * 3,
    ]
