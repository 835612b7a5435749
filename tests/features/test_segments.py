"""Segments over HTTP: getSegments, createSegment, getSegment, updateSegment, removeSegment,
getStrategiesBySegmentId, getSegmentsByStrategyId and validateSegment, answered as Unleash 8.2
answers them (statuses, bodies and messages measured on the reference), and a segment's change
reaching SDKs through the client API."""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings
from rest_framework.test import APIClient

from features.models import FeatureStrategySegment, Segment
from flagadmin.core.models import AuditEvent, Role, TokenType
from tests.conftest import assert_error
from tests.factories import ProjectFactory, UserFactory, make_token

SEGMENTS = "/api/admin/segments"
FEATURES = "/api/admin/projects/default/features"
IN_WEB = {"contextName": "appName", "operator": "IN", "values": ["web"]}
# A constraint as stored and answered: the flags Unleash's schema defaults filled in.
IN_WEB_STORED = IN_WEB | {"caseInsensitive": False, "inverted": False}


def send(client, method: str, url: str, body) -> object:
    if method in ("get", "delete"):
        return getattr(client, method)(url)
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


def create(client, **body) -> dict:
    response = send(client, "post", SEGMENTS, {"constraints": [], **body})
    assert response.status_code == 201, response.content
    return response.json()


def strategy_with(client, segment_ids: list[int], *, project: str = "default", flag="f") -> str:
    base = f"/api/admin/projects/{project}/features"
    if send(client, "get", f"{base}/{flag}", None).status_code != 200:
        assert send(client, "post", base, {"name": flag}).status_code == 201
    response = send(
        client,
        "post",
        f"{base}/{flag}/environments/development/strategies",
        {"name": "default", "segments": segment_ids},
    )
    assert response.status_code == 200, response.content
    return response.json()["id"]


def _segment_body(segment_id: int, name: str, **fields) -> dict:
    created = Segment.objects.get(pk=segment_id).created_at
    return {
        "id": segment_id,
        "name": name,
        "description": None,
        "constraints": [],
        "createdBy": "admin-tok",
        "createdAt": created.isoformat().replace("+00:00", "Z"),
    } | fields


# --- create ---------------------------------------------------------------------------------


def test_create__201_body_location_and_event(admin_client):
    response = send(
        admin_client,
        "post",
        SEGMENTS,
        {"name": "beta", "description": "d", "project": "default", "constraints": [IN_WEB]},
    )

    assert response.status_code == 201
    body = response.json()
    assert response["Location"] == f"/api/admin/segments/{body['id']}"
    expected = _segment_body(
        body["id"], "beta", description="d", project="default", constraints=[IN_WEB_STORED]
    )
    assert body == expected
    assert list(body) == [
        "id",
        "name",
        "description",
        "project",
        "constraints",
        "createdBy",
        "createdAt",
    ]
    event = AuditEvent.objects.get(type="segment-created")
    assert (event.project, event.created_by, event.data, event.pre_data) == (
        "default",
        "admin-tok",
        expected,
        None,
    )


def test_create__without_project_or_description__leaves_them_out(admin_client):
    body = create(admin_client, name="beta")

    assert body == _segment_body(body["id"], "beta")


def test_create__numbers_taken_as_strings_as_unleash_coerces_them(admin_client):
    body = create(admin_client, name=5, description=7)

    assert (body["name"], body["description"]) == ("5", "7")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"constraints": []}, "/body/name", id="no-name"),
        pytest.param({"name": "", "constraints": []}, "/body/name", id="empty-name"),
        pytest.param({"name": "x" * 256, "constraints": []}, "/body/name", id="long-name"),
        pytest.param({"name": "s"}, "/body/constraints", id="no-constraints"),
        pytest.param({"name": "s", "constraints": {}}, "/body/constraints", id="not-a-list"),
        pytest.param(
            {"name": "s", "constraints": [IN_WEB | {"operator": "FOO"}]},
            "/body/constraints/0/operator",
            id="unknown-operator",
        ),
        pytest.param(
            {"name": "s", "constraints": [IN_WEB | {"values": []}]},
            "/body/constraints/0/values",
            id="no-values",
        ),
        pytest.param(
            {"name": "s", "project": 5, "constraints": []}, "/body/project", id="project-number"
        ),
        # Unleash answers 500 here (its foreign key fails in SQL): the body is what is wrong.
        pytest.param(
            {"name": "s", "project": "nope", "constraints": []},
            "/body/project",
            id="unknown-project",
        ),
    ],
)
def test_create__invalid__400(admin_client, body, path):
    response = send(admin_client, "post", SEGMENTS, body)

    error = assert_error(response, 400, "ValidationError")
    assert [detail["path"] for detail in error["details"]] == [path]
    assert not Segment.objects.exists()
    assert not AuditEvent.objects.filter(type="segment-created").exists()


def test_create__name_taken__409(admin_client):
    create(admin_client, name="beta")

    response = send(admin_client, "post", SEGMENTS, {"name": "beta", "constraints": []})

    assert assert_error(response, 409, "NameExistsError")["message"] == (
        "Segment name already exists"
    )


@override_settings(SEGMENTS_LIMIT=1)
def test_create__past_the_limit_of_segments__400_exceeds_limit(admin_client):
    create(admin_client, name="one")

    response = send(admin_client, "post", SEGMENTS, {"name": "two", "constraints": []})

    assert assert_error(response, 400, "ExceedsLimitError")["message"] == (
        "Failed to create segment. You can't create more than the established limit of 1."
    )
    assert Segment.objects.count() == 1


@override_settings(SEGMENT_VALUES_LIMIT=2)
def test_create__more_values_than_the_limit__400(admin_client):
    constraints = [IN_WEB, IN_WEB | {"values": ["a", "b"]}]

    response = send(admin_client, "post", SEGMENTS, {"name": "s", "constraints": constraints})

    assert assert_error(response, 400, "ValidationError")["message"] == (
        "Segments may not have more than 2 values"
    )


# --- read -----------------------------------------------------------------------------------


def test_list__by_name_with_usage_of_active_flags(admin_client, django_assert_max_num_queries):
    beta = create(admin_client, name="beta")
    alpha = create(admin_client, name="alpha", project="default")
    strategy_with(admin_client, [beta["id"]], flag="f1")
    strategy_with(admin_client, [beta["id"]], flag="f2")
    strategy_with(admin_client, [beta["id"], alpha["id"]], flag="gone")
    send(admin_client, "post", "/api/admin/projects/default/archive", {"features": ["gone"]})

    with django_assert_max_num_queries(4):
        response = admin_client.get(SEGMENTS)

    assert response.status_code == 200
    assert response.json() == {
        "segments": [
            _segment_body(
                alpha["id"], "alpha", project="default", usedInProjects=0, usedInFeatures=0
            ),
            _segment_body(beta["id"], "beta", usedInProjects=1, usedInFeatures=2),
        ]
    }


def test_list__query_count_does_not_grow(admin_client, django_assert_max_num_queries):
    for index in range(20):
        segment = create(admin_client, name=f"s{index}")
        strategy_with(admin_client, [segment["id"]], flag=f"f{index}")

    with django_assert_max_num_queries(4):
        assert len(admin_client.get(SEGMENTS).json()["segments"]) == 20


def test_get__200_without_usage(admin_client):
    segment = create(admin_client, name="beta", constraints=[IN_WEB])

    response = admin_client.get(f"{SEGMENTS}/{segment['id']}")

    assert response.status_code == 200
    assert response.json() == _segment_body(segment["id"], "beta", constraints=[IN_WEB_STORED])


@pytest.mark.parametrize("segment_id", ["999999", "abc", "0"])
def test_get__unknown__404(admin_client, segment_id):
    response = admin_client.get(f"{SEGMENTS}/{segment_id}")

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        f'No segment exists with ID "{segment_id}"'
    )


def test_strategies_by_segment__active_flags_only(admin_client):
    segment = create(admin_client, name="beta")
    strategy_id = strategy_with(admin_client, [segment["id"]], flag="f1")
    strategy_with(admin_client, [segment["id"]], flag="gone")
    send(admin_client, "post", "/api/admin/projects/default/archive", {"features": ["gone"]})

    response = admin_client.get(f"{SEGMENTS}/{segment['id']}/strategies")

    assert response.status_code == 200
    assert response.json() == {
        "strategies": [
            {
                "id": strategy_id,
                "projectId": "default",
                "featureName": "f1",
                "strategyName": "default",
                "environment": "development",
            }
        ],
        "changeRequestStrategies": [],
    }


def test_strategies_by_segment__unknown__404(admin_client):
    assert_error(admin_client.get(f"{SEGMENTS}/999/strategies"), 404, "NotFoundError")


def test_segments_by_strategy(admin_client):
    segment = create(admin_client, name="beta")
    strategy_id = strategy_with(admin_client, [segment["id"]])

    response = admin_client.get(f"{SEGMENTS}/strategies/{strategy_id}")
    unknown = admin_client.get(f"{SEGMENTS}/strategies/not-a-strategy")

    assert response.status_code == 200
    assert response.json() == {"segments": [_segment_body(segment["id"], "beta")]}
    assert (unknown.status_code, unknown.json()) == (200, {"segments": []})


# --- update ---------------------------------------------------------------------------------


def test_update__204_replaces_and_records_before_and_after(admin_client):
    segment = create(admin_client, name="beta", description="d", project="default")
    before = admin_client.get(f"{SEGMENTS}/{segment['id']}").json()

    response = send(
        admin_client,
        "put",
        f"{SEGMENTS}/{segment['id']}",
        {"name": "gamma", "constraints": [IN_WEB]},
    )

    assert (response.status_code, response.content) == (204, b"")
    after = admin_client.get(f"{SEGMENTS}/{segment['id']}").json()
    # Unleash: a project left out becomes none; a description left out stays.
    assert after == _segment_body(
        segment["id"], "gamma", description="d", constraints=[IN_WEB_STORED]
    )
    event = AuditEvent.objects.get(type="segment-updated")
    assert (event.project, event.data, event.pre_data) == (None, after, before)


def test_update__description_null_clears_it(admin_client):
    segment = create(admin_client, name="beta", description="d")

    send(
        admin_client,
        "put",
        f"{SEGMENTS}/{segment['id']}",
        {"name": "beta", "description": None, "constraints": []},
    )

    assert Segment.objects.get().description is None


def test_update__unknown__404(admin_client):
    response = send(admin_client, "put", f"{SEGMENTS}/999", {"name": "s", "constraints": []})

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'No segment exists with ID "999"'
    )


@pytest.mark.parametrize("method", ["put", "delete"])
def test_update_and_delete__id_no_segment_can_have__404_naming_it(admin_client, method):
    body = {"name": "s", "constraints": []} if method == "put" else None

    response = send(admin_client, method, f"{SEGMENTS}/99999999999999999999", body)

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        'No segment exists with ID "99999999999999999999"'
    )


def test_update__name_of_another__409(admin_client):
    create(admin_client, name="alpha")
    beta = create(admin_client, name="beta")

    response = send(
        admin_client, "put", f"{SEGMENTS}/{beta['id']}", {"name": "alpha", "constraints": []}
    )

    assert_error(response, 409, "NameExistsError")


def test_update__project_while_used_in_another__400(admin_client):
    ProjectFactory(id="other")
    segment = create(admin_client, name="beta")
    strategy_with(admin_client, [segment["id"]])

    response = send(
        admin_client,
        "put",
        f"{SEGMENTS}/{segment['id']}",
        {"name": "beta", "project": "other", "constraints": []},
    )

    assert assert_error(response, 400, "ValidationError")["message"] == (
        "Invalid project. Segment is being used by strategies in other projects: default"
    )
    assert Segment.objects.get().project_id is None


def test_update__reaches_sdks_through_the_client_api(admin_client):
    segment = create(admin_client, name="beta", constraints=[IN_WEB])
    strategy_with(admin_client, [segment["id"]])
    send(admin_client, "post", f"{FEATURES}/f/environments/development/on", None)
    sdk = APIClient()
    sdk.credentials(HTTP_AUTHORIZATION=make_token(TokenType.CLIENT, projects=["*"])[1])
    first = sdk.get("/api/client/features")
    assert first.json()["features"][0]["strategies"][0]["constraints"] == [IN_WEB_STORED]

    updated = IN_WEB | {"values": ["mobile"]}
    send(
        admin_client,
        "put",
        f"{SEGMENTS}/{segment['id']}",
        {"name": "beta", "constraints": [updated]},
    )
    again = sdk.get("/api/client/features", HTTP_IF_NONE_MATCH=first["ETag"])

    assert again.status_code == 200
    assert again.json()["features"][0]["strategies"][0]["constraints"] == [
        updated | {"caseInsensitive": False, "inverted": False}
    ]


# --- delete ---------------------------------------------------------------------------------


def test_delete__204_and_event(admin_client):
    segment = create(admin_client, name="beta")
    before = admin_client.get(f"{SEGMENTS}/{segment['id']}").json()

    response = admin_client.delete(f"{SEGMENTS}/{segment['id']}")

    assert (response.status_code, response.content) == (204, b"")
    assert not Segment.objects.exists()
    event = AuditEvent.objects.get(type="segment-deleted")
    assert (event.data, event.pre_data) == (None, before)


def test_delete__in_use__409(admin_client):
    segment = create(admin_client, name="beta")
    strategy_with(admin_client, [segment["id"]])

    response = admin_client.delete(f"{SEGMENTS}/{segment['id']}")

    assert_error(response, 409, "SegmentInUseError")
    assert Segment.objects.exists()


def test_delete__used_by_archived_flags_only__their_strategies_lose_it(admin_client):
    segment = create(admin_client, name="beta")
    strategy_with(admin_client, [segment["id"]], flag="gone")
    send(admin_client, "post", "/api/admin/projects/default/archive", {"features": ["gone"]})

    response = admin_client.delete(f"{SEGMENTS}/{segment['id']}")

    assert response.status_code == 204
    assert not FeatureStrategySegment.objects.exists()


def test_delete__unknown__404(admin_client):
    assert_error(admin_client.delete(f"{SEGMENTS}/999"), 404, "NotFoundError")


# --- validate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "name", "message"),
    [
        pytest.param({"name": "free"}, 204, None, None, id="free"),
        pytest.param(
            {"name": "beta"}, 409, "NameExistsError", "Segment name already exists", id="taken"
        ),
        pytest.param(
            {"name": ""}, 400, "ValidationError", "Segment name cannot be empty", id="empty"
        ),
        pytest.param(
            {"name": "x", "extra": 1},
            400,
            "ValidationError",
            "The `/body` object of the request body does not allow additional properties. "
            "Your request included the `/body/extra` property.",
            id="additional-property",
        ),
    ],
)
def test_validate(admin_client, body, status, name, message):
    create(admin_client, name="beta")

    response = send(admin_client, "post", f"{SEGMENTS}/validate", body)

    if name is None:
        assert (response.status_code, response.content) == (status, b"")
    else:
        assert assert_error(response, status, name)["message"] == message


# --- strategies and a project's segments -------------------------------------------------------


def test_strategy__segment_of_another_project__400(admin_client):
    ProjectFactory(id="other")
    segment = create(admin_client, name="beta", project="other")
    send(admin_client, "post", FEATURES, {"name": "f"})

    response = send(
        admin_client,
        "post",
        f"{FEATURES}/f/environments/development/strategies",
        {"name": "default", "segments": [segment["id"]]},
    )

    assert assert_error(response, 400, "ValidationError")["message"] == (
        f'The segments beta with id {segment["id"]} does not belong to project "default"'
    )


def test_strategy__segment_of_its_project__200(admin_client):
    segment = create(admin_client, name="beta", project="default")

    strategy_with(admin_client, [segment["id"]])

    assert FeatureStrategySegment.objects.count() == 1


# --- who may ----------------------------------------------------------------------------------

ALL_CALLS = [
    pytest.param("get", SEGMENTS, id="list"),
    pytest.param("post", SEGMENTS, id="create"),
    pytest.param("get", f"{SEGMENTS}/1", id="get"),
    pytest.param("put", f"{SEGMENTS}/1", id="update"),
    pytest.param("delete", f"{SEGMENTS}/1", id="delete"),
    pytest.param("get", f"{SEGMENTS}/1/strategies", id="strategies"),
    pytest.param("get", f"{SEGMENTS}/strategies/x", id="by-strategy"),
    pytest.param("post", f"{SEGMENTS}/validate", id="validate"),
]
WRITES = [
    pytest.param("post", SEGMENTS, "CREATE_SEGMENT", id="create"),
    pytest.param("put", f"{SEGMENTS}/1", "UPDATE_SEGMENT", id="update"),
    pytest.param("delete", f"{SEGMENTS}/1", "DELETE_SEGMENT", id="delete"),
]


@pytest.mark.parametrize(("method", "url"), ALL_CALLS)
def test_anonymous__401(anon_client, db, method, url):
    assert_error(send(anon_client, method, url, {}), 401, "AuthenticationRequired")


@pytest.mark.parametrize(("method", "url"), ALL_CALLS)
def test_client_token__403(client_token_client, method, url):
    assert_error(send(client_token_client, method, url, {}), 403, "NoAccessError")


@pytest.mark.parametrize(("method", "url", "permission"), WRITES)
def test_viewer__writes_403(viewer_client, method, url, permission):
    error = assert_error(send(viewer_client, method, url, {}), 403, "NoAccessError")

    assert error["permissions"] == [permission]


def test_viewer__reads(viewer_client, admin_client):
    segment = create(admin_client, name="beta")

    assert viewer_client.get(SEGMENTS).status_code == 200
    assert viewer_client.get(f"{SEGMENTS}/{segment['id']}").status_code == 200


def test_editor__creates_updates_deletes(editor_client):
    segment = create(editor_client, name="beta")
    url = f"{SEGMENTS}/{segment['id']}"

    assert send(editor_client, "put", url, {"name": "b", "constraints": []}).status_code == 204
    assert editor_client.delete(url).status_code == 204
    assert AuditEvent.objects.get(type="segment-created").created_by_user_id == (
        editor_client.user.pk
    )


@pytest.mark.parametrize(
    ("method", "url"),
    [
        pytest.param("post", SEGMENTS, id="create"),
        pytest.param("put", f"{SEGMENTS}/1", id="update"),
        pytest.param("post", f"{SEGMENTS}/validate", id="validate"),
    ],
)
def test_wrong_content_type__415(admin_client, method, url):
    response = getattr(admin_client, method)(url, "name=x", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


# --- the Django admin holds the same rules --------------------------------------------------------


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.ADMIN))
    return client


@override_settings(SEGMENTS_LIMIT=1)
def test_admin_add_segment__past_the_limit__form_error(staff, admin_client):
    create(admin_client, name="one")
    data = {"name": "two", "constraints": "[]", "created_by": ""}

    response = staff.post("/admin/features/segment/add/", data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "__all__": [
            "Failed to create segment. You can't create more than the established limit of 1."
        ]
    }
    assert Segment.objects.count() == 1


def test_admin_change_segment__project_while_used_in_another__form_error(staff, admin_client):
    ProjectFactory(id="other")
    segment = create(admin_client, name="beta")
    strategy_with(admin_client, [segment["id"]])
    data = {"name": "beta", "project": "other", "constraints": "[]", "created_by": ""}

    response = staff.post(f"/admin/features/segment/{segment['id']}/change/", data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "__all__": [
            "Invalid project. Segment is being used by strategies in other projects: default"
        ]
    }
    assert Segment.objects.get().project_id is None
