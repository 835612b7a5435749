"""Bounded 400s: whatever a client sends, the error body and its log line stay small, at most
20 `details` are listed (the message says how many more there were), quoted values are short,
and a long list is refused before its items are checked (no 45,000 error objects)."""

from __future__ import annotations

import json
import logging
import tracemalloc

import pytest

from flagadmin.core.models import Role
from tests.conftest import assert_error
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

SIZE_LIMIT = 64 * 1024
# json.dumps([0] * 45000) cut after 300 characters, as the handler quotes it.
QUOTED_ZEROS = "[" + "0, " * 99 + "0,… (shortened)"


def _too_many(path: str, limit: int) -> str:
    return f"The `{path}` property must NOT have more than {limit} items. You sent {QUOTED_ZEROS}."


@pytest.mark.parametrize(
    ("url", "body", "path", "limit"),
    [
        pytest.param(
            "/api/admin/projects/team/access",
            {"roles": [Role.MEMBER], "users": [0] * 45_000},
            "/body/users",
            1000,
            id="project-access-45000-users",
        ),
        pytest.param(
            "/api/admin/projects/team/access",
            {"roles": [Role.MEMBER], "groups": [0] * 45_000},
            "/body/groups",
            1000,
            id="project-access-45000-groups",
        ),
        pytest.param(
            "/api/admin/projects/team/features",
            {"name": "flag", "tags": [0] * 45_000},
            "/body/tags",
            100,
            id="flag-45000-tags",
        ),
        pytest.param(
            "/api/admin/groups",
            {"name": "g", "users": [0] * 45_000},
            "/body/users",
            6000,
            id="group-45000-members",
        ),
        pytest.param(
            "/api/admin/projects",
            {"id": "p", "name": "P", "environments": [0] * 45_000},
            "/body/environments",
            1000,
            id="project-45000-environments",
        ),
    ],
)
def test_huge_list_of_bad_items__400_one_detail_small_body_and_log(
    admin_client, caplog, url, body, path, limit
):
    ProjectFactory(id="team", name="Team")
    raw = json.dumps(body, separators=(",", ":"))
    assert len(raw) < 100 * 1024  # under the body limit: the handler, not the 413, answers
    caplog.set_level(logging.INFO, logger="flagadmin.errors")
    admin_client.post(url, {}, format="json")  # imports and caches warmed up, not measured
    tracemalloc.start()

    response = admin_client.post(url, raw, content_type="application/json")

    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    error = assert_error(response, 400, "ValidationError")
    message = _too_many(path, limit)
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": message,
        "details": [{"path": path, "message": message}],
    }
    assert len(response.content) < SIZE_LIMIT
    assert max(len(record.getMessage()) for record in caplog.records) < SIZE_LIMIT
    # Before the bound, 45,000 error objects and a 9 MB body took tens of megabytes.
    assert peak < 4 * 1024 * 1024


def test_many_unknown_ids__first_20_details_and_how_many_more(admin_client):
    ProjectFactory(id="team", name="Team")
    unknown = list(range(10**9, 10**9 + 50))

    response = admin_client.post(
        "/api/admin/projects/team/access",
        {"roles": [Role.MEMBER], "users": unknown},
        format="json",
    )

    error = assert_error(response, 400, "ValidationError")
    details = [
        {
            "path": f"/body/users/{index}",
            "message": f"The `/body/users/{index}` property must be the id of an existing "
            f"user. You sent {unknown[index]}.",
        }
        for index in range(20)
    ]
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": " ".join(d["message"] for d in details)
        + " And 30 more problems (only the first 20 are listed).",
        "details": details,
    }


def test_many_long_bad_values__quoted_short_body_and_log_small(admin_client, caplog):
    ProjectFactory(id="team", name="Team")
    # 1,000 strings of 90 characters where integers belong: just under the 100 kB body limit.
    body = {"roles": [Role.MEMBER], "users": ["x" * 90] * 1000}
    caplog.set_level(logging.INFO, logger="flagadmin.errors")

    response = admin_client.post("/api/admin/projects/team/access", body, format="json")

    error = assert_error(response, 400, "ValidationError")
    sent = '"' + "x" * 90 + '"'
    details = [
        {
            "path": f"/body/users/{index}",
            "message": f"The `/body/users/{index}` property must be integer. You sent {sent}.",
        }
        for index in range(20)
    ]
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": " ".join(d["message"] for d in details)
        + " And 980 more problems (only the first 20 are listed).",
        "details": details,
    }
    assert len(response.content) < SIZE_LIMIT
    assert max(len(record.getMessage()) for record in caplog.records) < SIZE_LIMIT


def test_one_huge_value__quoted_shortened(admin_client):
    ProjectFactory(id="team", name="Team")

    response = admin_client.post(
        "/api/admin/projects/team/features", {"name": "n" * 90_000}, format="json"
    )

    error = assert_error(response, 400, "ValidationError")
    message = (
        "The `/body/name` property must NOT have more than 100 characters. You sent "
        + '"'
        + "n" * 299
        + "… (shortened)."
    )
    assert error == {
        "id": error["id"],
        "name": "ValidationError",
        "message": message,
        "details": [{"path": "/body/name", "message": message}],
    }
