"""GET /api/client/features refuses query values with a NUL or another control character
(400, the error body), before any query: PostgreSQL cannot compare text with a NUL (it was a
500), and no flag, tag or project name holds one."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from flagadmin.core.models import TokenType
from tests.conftest import assert_error
from tests.factories import make_token

NUL = "must not contain the NUL character (\\u0000)"
CONTROL = "must not contain control characters (\\u0001 to \\u001f, \\u007f)"


@pytest.fixture
def sdk(db) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.CLIENT, projects=["*"])[1])
    return client


@pytest.mark.parametrize(
    ("query", "path", "problem", "sent"),
    [
        pytest.param("namePrefix=%00", "/query/namePrefix", NUL, '"\\u0000"', id="prefix-nul"),
        pytest.param(
            "namePrefix=a%01b", "/query/namePrefix", CONTROL, '"a\\u0001b"', id="prefix-control"
        ),
        pytest.param("tag=simple:a%00", "/query/tag/0", NUL, '"simple:a\\u0000"', id="tag-nul"),
        pytest.param(
            "tag=simple:x&tag=simple:%0A", "/query/tag/1", CONTROL, '"simple:\\n"', id="tag-newline"
        ),
        pytest.param(
            "project=de%00fault", "/query/project/0", NUL, '"de\\u0000fault"', id="project-nul"
        ),
        pytest.param(
            "project=default&project=%7F", "/query/project/1", CONTROL, '"\x7f"', id="project-del"
        ),
    ],
)
@pytest.mark.parametrize("route", ["/api/client/features", "/api/client/features/checkout"])
def test_control_character_in_query__400_naming_it(sdk, route, query, path, problem, sent):
    response = sdk.get(f"{route}?{query}")

    body = assert_error(response, 400, "ValidationError")
    message = f"The `{path}` property {problem}. You sent {sent}."
    assert body == {
        "id": body["id"],
        "name": "ValidationError",
        "message": message,
        "details": [{"path": path, "message": message}],
    }


def test_control_character_in_query__anonymous__401_first(anon_client, db):
    response = anon_client.get("/api/client/features?namePrefix=%00")

    assert_error(response, 401, "AuthenticationRequired")
