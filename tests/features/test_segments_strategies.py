"""POST /api/admin/segments/strategies (Unleash's updateFeatureStrategySegments): the segments a
strategy uses, set as a whole, with its event, and what SDKs then get. Unleash 8.2 answers 201
with the body as sent (measured); it writes no event, links strategies of any project and answers
500 for an unknown strategy or segment: here each of those is said in a test."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from features.models import FeatureStrategySegment
from features.segment_strategy_services import find_strategy, set_strategy_segments
from flagadmin.core.errors import InvalidInputError
from flagadmin.core.models import AuditEvent, Role, TokenType
from tests.conftest import assert_error
from tests.factories import (
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
    make_token,
)

URL = "/api/admin/segments/strategies"
SEGMENTS = "/api/admin/segments"
FEATURES = "/api/admin/projects/default/features"
CLIENT_FEATURES = "/api/client/features"
IN_WEB = {"contextName": "appName", "operator": "IN", "values": ["web"]}


def send(client: APIClient, method: str, url: str, body=None):
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


def segment(client: APIClient, name: str, **fields) -> int:
    response = send(client, "post", SEGMENTS, {"name": name, "constraints": [IN_WEB], **fields})
    assert response.status_code == 201, response.content
    return response.json()["id"]


def strategy(client: APIClient, segments=(), *, project="default", flag="f", env="development"):
    base = f"/api/admin/projects/{project}/features"
    if send(client, "get", f"{base}/{flag}").status_code != 200:
        assert send(client, "post", base, {"name": flag}).status_code == 201
    url = f"{base}/{flag}/environments/{env}/strategies"
    response = send(client, "post", url, {"name": "default", "segments": list(segments)})
    assert response.status_code == 200, response.content
    return response.json()["id"]


def body_for(strategy_id: str, segment_ids, project="default", env="development") -> dict:
    return {
        "projectId": project,
        "strategyId": strategy_id,
        "environmentId": env,
        "segmentIds": list(segment_ids),
    }


def links(strategy_id: str) -> list[int]:
    return sorted(
        FeatureStrategySegment.objects.filter(strategy_id=strategy_id).values_list(
            "segment_id", flat=True
        )
    )


def updates() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(type="feature-strategy-update").order_by("id"))


def test_set__201_body_location_links_and_event(admin_client):
    first, second, third = (segment(admin_client, n) for n in ("s1", "s2", "s3"))
    strategy_id = strategy(admin_client, [first, second])

    response = send(admin_client, "post", URL, body_for(strategy_id, [third, second]))

    assert response.status_code == 201
    assert response.json() == body_for(strategy_id, [third, second])
    assert response["Location"] == f"/api/admin/segments/strategies/{strategy_id}"
    assert links(strategy_id) == sorted([second, third])
    (event,) = updates()
    common = {
        "id": strategy_id,
        "name": "default",
        "title": None,
        "disabled": False,
        "constraints": [],
        "parameters": {},
        "variants": [],
        "sortOrder": 0,
    }
    assert (event.project, event.feature_name, event.environment, event.created_by) == (
        "default",
        "f",
        "development",
        "admin-tok",
    )
    assert event.pre_data == common | {"segments": sorted([first, second])}
    assert event.data == common | {"segments": sorted([second, third])}


def test_set__reads_back_through_get_segments_by_strategy(admin_client):
    kept = segment(admin_client, "kept")
    strategy_id = strategy(admin_client, [segment(admin_client, "dropped")])

    send(admin_client, "post", URL, body_for(strategy_id, [kept]))

    names = [s["name"] for s in admin_client.get(f"{URL}/{strategy_id}").json()["segments"]]
    assert names == ["kept"]


def test_set__empty_list__none_left(admin_client):
    strategy_id = strategy(admin_client, [segment(admin_client, "s1")])

    response = send(admin_client, "post", URL, body_for(strategy_id, []))

    assert (response.status_code, links(strategy_id)) == (201, [])


def test_set__same_segments__no_event(admin_client):
    first = segment(admin_client, "s1")
    strategy_id = strategy(admin_client, [first])

    response = send(admin_client, "post", URL, body_for(strategy_id, [first, first]))

    assert (response.status_code, updates()) == (201, [])


def test_set__unknown_field__ignored_not_echoed(admin_client):
    strategy_id = strategy(admin_client)
    # Unleash echoes it back in its 201.
    response = send(admin_client, "post", URL, body_for(strategy_id, []) | {"extra": 1})

    assert response.json() == body_for(strategy_id, [])


def test_set__client_payload_moves(admin_client):
    first = segment(admin_client, "s1")
    strategy_id = strategy(admin_client)
    send(admin_client, "post", f"{FEATURES}/f/environments/development/on")
    sdk = APIClient()
    sdk.credentials(HTTP_AUTHORIZATION=make_token(TokenType.CLIENT, projects=["default"])[1])
    before = sdk.get(CLIENT_FEATURES)

    send(admin_client, "post", URL, body_for(strategy_id, [first]))
    after = sdk.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=before["ETag"])

    # Unleash 8.2 records no event here, so its SDKs keep the old state until another change.
    assert after.status_code == 200
    assert after["ETag"] != before["ETag"]
    (flag,) = after.json()["features"]
    assert flag["strategies"][0]["constraints"] == [
        IN_WEB | {"caseInsensitive": False, "inverted": False}
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            {"strategyId": "nope"}, "Could not find strategy with id nope", id="not-a-uuid"
        ),
        pytest.param(
            {"strategyId": "7d3a3e4c-5a55-4c3d-9d1e-3a5f0c1b2a10"},
            "Could not find strategy with id 7d3a3e4c-5a55-4c3d-9d1e-3a5f0c1b2a10",
            id="unknown",
        ),
        pytest.param({"environmentId": "production"}, None, id="other-environment"),
        pytest.param({"projectId": "other"}, None, id="other-project"),
    ],
)
def test_set__strategy_not_there__404(admin_client, change, message):
    # Unleash 8.2 answers 500 for an unknown strategy, and links one of any project or
    # environment whatever the body says.
    ProjectFactory(id="other")
    strategy_id = strategy(admin_client)

    response = send(admin_client, "post", URL, body_for(strategy_id, []) | change)

    body = assert_error(response, 404, "NotFoundError")
    assert body["message"] == (message or f"Could not find strategy with id {strategy_id}")


def test_set__archived_flag__404(admin_client):
    strategy_id = strategy(admin_client)
    send(admin_client, "delete", f"{FEATURES}/f")

    assert_error(send(admin_client, "post", URL, body_for(strategy_id, [])), 404, "NotFoundError")


def test_set__unknown_segment__400_nothing_changed(admin_client):
    # Unleash 8.2 answers 500 (its foreign key fails).
    first = segment(admin_client, "s1")
    strategy_id = strategy(admin_client, [first])

    response = send(admin_client, "post", URL, body_for(strategy_id, [first, 999]))

    body = assert_error(response, 400, "ValidationError")
    assert body["details"] == [
        {
            "path": "/body/segmentIds",
            "message": "The `/body/segmentIds` property names unknown segments: [999].",
        }
    ]
    assert (links(strategy_id), updates()) == ([first], [])


def test_set__segment_of_another_project__400(admin_client):
    ProjectFactory(id="other")
    theirs = segment(admin_client, "theirs", project="other")
    strategy_id = strategy(admin_client)

    response = send(admin_client, "post", URL, body_for(strategy_id, [theirs]))

    body = assert_error(response, 400, "ValidationError")
    assert body["details"] == [
        {
            "path": "/body/segmentIds",
            "message": f'The segments theirs with id {theirs} does not belong to project "default"',
        }
    ]


def test_set__over_the_limit__400(admin_client):
    strategy_id = strategy(admin_client)
    ids = [segment(admin_client, f"s{n}") for n in range(6)]

    response = send(admin_client, "post", URL, body_for(strategy_id, ids))

    body = assert_error(response, 400, "ValidationError")
    assert body["details"] == [
        {
            "path": "/body/segmentIds",
            "message": "Strategies may not have more than 5 segments",
        }
    ]


def test_set__one_id_repeated_past_the_limit__one_segment_201(admin_client):
    """Unleash 8.2 counts the repeats (400 "Strategies may not have more than 5 segments" for
    six times one id) and answers 500 for any repeat under the limit (its insert repeats the
    link); checked on the reference. A repeated id is one segment here."""
    first = segment(admin_client, "s1")
    strategy_id = strategy(admin_client)

    response = send(admin_client, "post", URL, body_for(strategy_id, [first] * 6))

    assert response.status_code == 201, response.content
    assert response.json() == body_for(strategy_id, [first] * 6)
    assert links(strategy_id) == [first]
    (event,) = updates()
    assert event.data["segments"] == [first]


def test_set_strategy_segments__over_the_limit__refused_by_the_service(admin_client):
    """The limit is the service's, under its locks, whoever calls it (not only the API's
    serializer)."""
    ids = [segment(admin_client, f"s{n}") for n in range(6)]
    found = find_strategy(
        project_id="default", environment="development", strategy_id=strategy(admin_client)
    )

    with pytest.raises(InvalidInputError) as refused:
        set_strategy_segments(strategy=found, segment_ids=ids + ids[:1], actor=UserFactory())

    assert [(p.field, p.message) for p in refused.value.problems] == [
        (("segmentIds",), "Strategies may not have more than 5 segments")
    ]
    assert (links(found.id), updates()) == ([], [])


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param(
            {"strategyId": "s", "environmentId": "e", "segmentIds": []},
            "/body/projectId",
            id="no-project",
        ),
        pytest.param(
            {"projectId": "p", "environmentId": "e", "segmentIds": []},
            "/body/strategyId",
            id="no-strategy",
        ),
        pytest.param(
            {"projectId": "p", "strategyId": "s", "segmentIds": []},
            "/body/environmentId",
            id="no-environment",
        ),
        pytest.param(
            {"projectId": "p", "strategyId": "s", "environmentId": "e"},
            "/body/segmentIds",
            id="no-segments",
        ),
        pytest.param(body_for("s", [-1]), "/body/segmentIds/0", id="negative-id"),
        pytest.param(body_for("s", ["1"]), "/body/segmentIds/0", id="string-id"),
        pytest.param(body_for("s", [1]) | {"projectId": 5}, "/body/projectId", id="project-number"),
        pytest.param([], "/body", id="array"),
    ],
)
def test_set__invalid__400(admin_client, body, path):
    error = assert_error(send(admin_client, "post", URL, body), 400, "ValidationError")

    assert error["details"][0]["path"] == path


def test_set__anonymous__401(anon_client):
    assert_error(send(anon_client, "post", URL, body_for("s", [])), 401, "AuthenticationRequired")


def test_set__client_token__403(client_token_client):
    assert_error(send(client_token_client, "post", URL, body_for("s", [])), 403, "NoAccessError")


def test_set__viewer__403_update_feature(admin_client, viewer_client):
    strategy_id = strategy(admin_client)

    error = assert_error(
        send(viewer_client, "post", URL, body_for(strategy_id, [])), 403, "NoAccessError"
    )

    assert error["permissions"] == ["UPDATE_FEATURE"]


def test_set__member_of_that_project_only(admin_client):
    # UPDATE_FEATURE in the body's project, as Unleash asks UPDATE_FEATURE_STRATEGY there.
    ProjectFactory(id="other")
    user = UserFactory(root_role_id=Role.VIEWER)
    ProjectRoleAssignmentFactory(user=user, project_id="other", role_id=Role.MEMBER)
    member = APIClient()
    member.credentials(HTTP_AUTHORIZATION=make_token(TokenType.PERSONAL, user=user)[1])
    in_default = strategy(admin_client)
    in_other = strategy(admin_client, project="other", flag="g")

    refused = send(member, "post", URL, body_for(in_default, []))
    allowed = send(member, "post", URL, body_for(in_other, [], project="other"))

    assert_error(refused, 403, "NoAccessError")
    assert allowed.status_code == 201


def test_set__text_body__415(admin_client):
    response = admin_client.post(URL, json.dumps(body_for("s", [])), content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")
