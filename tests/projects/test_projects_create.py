"""POST /api/admin/projects and the project companions: GET /api/admin/projects/:id and
POST /api/admin/projects/archive/:id and /revive/:id."""

from __future__ import annotations

import pytest

from flagadmin.core.models import AuditEvent, Role
from projects.models import Environment, Project, ProjectEnvironment, ProjectRoleAssignment
from tests.conftest import assert_error
from tests.factories import ProjectFactory, ProjectRoleAssignmentFactory

URL = "/api/admin/projects"
pytestmark = pytest.mark.django_db


def post(client, url: str, body: object = None, **kwargs):
    return client.post(url, body if body is not None else {}, format="json", **kwargs)


def enabled_environments(project_id: str) -> list[str]:
    return sorted(
        ProjectEnvironment.objects.filter(project_id=project_id).values_list(
            "environment_id", flat=True
        )
    )


# --- create: success -------------------------------------------------------------------------


def test_create_project__admin_token__201_location_body_no_owner_event(admin_client):
    response = post(admin_client, URL, {"id": "payments", "name": "Payments"})

    assert response.status_code == 201, response.content
    assert response["Location"] == "/api/admin/projects/payments"
    body = response.json()
    project = Project.objects.get(pk="payments")
    assert body == {
        "favorite": False,
        "id": "payments",
        "name": "Payments",
        "description": None,
        "health": 100,
        "featureCount": 0,
        "staleFeatureCount": 0,
        "potentiallyStaleFeatureCount": 0,
        "memberCount": 0,
        "mode": "open",
        "defaultStickiness": "default",
        "createdAt": project.created_at.isoformat().replace("+00:00", "Z"),
        "updatedAt": None,
        "lastUpdatedAt": None,
        "archivedAt": None,
        "lastReportedFlagUsage": None,
        "owners": [{"ownerType": "system"}],
        "environments": ["development", "production"],
    }
    event = AuditEvent.objects.get(type="project-created")
    assert event.project == "payments"
    assert event.created_by == "admin-tok"
    assert event.created_by_user_id == -42
    assert event.data == {
        "id": "payments",
        "name": "Payments",
        "description": None,
        "mode": "open",
        "defaultStickiness": "default",
        "environments": ["development", "production"],
    }


def test_create_project__all_fields__stored(admin_client):
    response = post(
        admin_client,
        URL,
        {
            "id": "it's-(ok)!~*._",
            "name": "Odd but fine",
            "description": "All the allowed characters",
            "mode": "protected",
            "defaultStickiness": "userId",
            "environments": ["production"],
        },
    )

    assert response.status_code == 201, response.content
    assert response["Location"] == "/api/admin/projects/it's-(ok)!~*._"
    project = Project.objects.get(pk="it's-(ok)!~*._")
    assert (project.name, project.description, project.mode, project.default_stickiness) == (
        "Odd but fine",
        "All the allowed characters",
        "protected",
        "userId",
    )
    assert enabled_environments(project.pk) == ["production"]
    assert response.json()["environments"] == ["production"]


def test_create_project__user_token__that_user_is_owner_and_member(editor_client):
    user = editor_client.user

    response = post(editor_client, URL, {"id": "mine", "name": "Mine"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["owners"] == [
        {"ownerType": "user", "name": user.name, "email": user.email, "imageUrl": None}
    ]
    assert body["memberCount"] == 1
    assert ProjectRoleAssignment.objects.filter(
        project_id="mine", user=user, role_id=Role.OWNER
    ).exists()
    assert AuditEvent.objects.get(type="project-created").created_by_user_id == user.pk


def test_create_project__environments_absent__every_enabled_environment(admin_client):
    Environment.objects.create(name="staging", type="test", sort_order=150)
    Environment.objects.create(name="legacy", type="test", enabled=False)

    response = post(admin_client, URL, {"id": "envs", "name": "Envs"})

    assert response.json()["environments"] == ["development", "staging", "production"]


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        pytest.param([], [], id="empty-list-none"),
        pytest.param(["production", "production"], ["production"], id="repeats-collapse"),
    ],
)
def test_create_project__environments_listed__exactly_those(admin_client, sent, stored):
    response = post(admin_client, URL, {"id": "picky", "name": "Picky", "environments": sent})

    assert response.status_code == 201, response.content
    assert enabled_environments("picky") == stored


def test_create_project__fields_not_in_schema__ignored(admin_client):
    response = post(
        admin_client,
        URL,
        {
            "id": "plain",
            "name": "Plain",
            "archivedAt": "2020-01-01T00:00:00Z",
            "health": 3,
            "createdAt": "2020-01-01T00:00:00Z",
        },
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["archivedAt"] is None
    assert body["health"] == 100
    assert not body["createdAt"].startswith("2020")


def test_create_project__empty_description__stored_as_null(admin_client):
    post(admin_client, URL, {"id": "blank", "name": "Blank", "description": ""})

    assert Project.objects.get(pk="blank").description is None


def test_create_project__listed_afterwards(admin_client):
    post(admin_client, URL, {"id": "listed", "name": "Listed"})

    ids = [p["id"] for p in admin_client.get(URL).json()["projects"]]

    assert ids == ["default", "listed"]


# --- create: refusals ------------------------------------------------------------------------


@pytest.mark.parametrize("taken", ["default", "archived-one"])
def test_create_project__id_taken__409(admin_client, taken):
    ProjectFactory(id="archived-one", archived_at="2024-01-01T00:00:00Z")

    response = post(admin_client, URL, {"id": taken, "name": "Again"})

    body = assert_error(response, 409, "NameExistsError")
    assert body["message"] == "A project with this id already exists."
    assert AuditEvent.objects.filter(type="project-created").count() == 0


def test_create_project__id_differs_only_in_case__201(admin_client):
    response = post(admin_client, URL, {"id": "Default", "name": "Capital"})

    assert response.status_code == 201, response.content


REQUIRED = "property is required. It was not present on the data you sent."
URL_FRIENDLY = "must be URL friendly: only the characters A-Z a-z 0-9 - _ . ! ~ * ' ( ) are allowed"


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        pytest.param({"name": "x"}, "/body/id", f"The `/body/id` {REQUIRED}", id="id-missing"),
        pytest.param(
            {"id": "", "name": "x"},
            "/body/id",
            'The `/body/id` property must NOT have fewer than 1 characters. You sent "".',
            id="id-empty",
        ),
        pytest.param(
            {"id": "a b", "name": "x"},
            "/body/id",
            f'The `/body/id` property {URL_FRIENDLY}. You sent "a b".',
            id="id-space",
        ),
        pytest.param(
            {"id": "café", "name": "x"},
            "/body/id",
            f'The `/body/id` property {URL_FRIENDLY}. You sent "café".',
            id="id-non-ascii",
        ),
        pytest.param(
            {"id": "a/b", "name": "x"},
            "/body/id",
            f'The `/body/id` property {URL_FRIENDLY}. You sent "a/b".',
            id="id-slash",
        ),
        pytest.param(
            {"id": "ab\n", "name": "x"},
            "/body/id",
            f'The `/body/id` property {URL_FRIENDLY}. You sent "ab\\n".',  # as JSON writes it
            id="id-final-newline",
        ),
        pytest.param(
            {"id": ".", "name": "x"},
            "/body/id",
            'The `/body/id` property must not be "." or "..". You sent ".".',
            id="id-dot",
        ),
        pytest.param(
            {"id": "..", "name": "x"},
            "/body/id",
            'The `/body/id` property must not be "." or "..". You sent "..".',
            id="id-dot-dot",
        ),
        pytest.param(
            {"id": "a" * 101, "name": "x"},
            "/body/id",
            "The `/body/id` property must NOT have more than 100 characters. "
            f'You sent "{"a" * 101}".',
            id="id-too-long",
        ),
        pytest.param(
            {"id": 5, "name": "x"},
            "/body/id",
            "The `/body/id` property must be string. You sent 5.",
            id="id-number",
        ),
        pytest.param({"id": "x"}, "/body/name", f"The `/body/name` {REQUIRED}", id="name-missing"),
        pytest.param(
            {"id": "x", "name": ""},
            "/body/name",
            'The `/body/name` property must NOT have fewer than 1 characters. You sent "".',
            id="name-empty",
        ),
        pytest.param(
            {"id": "x", "name": "   "},
            "/body/name",
            'The `/body/name` property must not be blank. You sent "   ".',
            id="name-blank",
        ),
        pytest.param(
            {"id": "x", "name": None},
            "/body/name",
            "The `/body/name` property must be string. You sent null.",
            id="name-null",
        ),
        # Unleash 8.2 takes these; a name no reader can see whole is refused (issue 29).
        pytest.param(
            {"id": "x", "name": "Checkout\n"},
            "/body/name",
            "The `/body/name` property must not contain control characters "
            '(\\u0000 to \\u001f, \\u007f). You sent "Checkout\\n".',
            id="name-final-newline",
        ),
        pytest.param(
            {"id": "x", "name": "Check\x01out"},
            "/body/name",
            "The `/body/name` property must not contain control characters "
            '(\\u0000 to \\u001f, \\u007f). You sent "Check\\u0001out".',
            id="name-control-character",
        ),
        pytest.param(
            {"id": "x", "name": "Check\x7fout"},
            "/body/name",
            "The `/body/name` property must not contain control characters "
            '(\\u0000 to \\u001f, \\u007f). You sent "Check\x7fout".',
            id="name-delete-character",
        ),
        pytest.param(
            {"id": "x", "name": "x", "description": 3},
            "/body/description",
            "The `/body/description` property must be string. You sent 3.",
            id="description-number",
        ),
        pytest.param(
            {"id": "x", "name": "x", "mode": "secret"},
            "/body/mode",
            "The `/body/mode` property must be equal to one of the allowed values: "
            '"open", "protected", "private". You sent "secret".',
            id="mode-unknown",
        ),
        pytest.param(
            {"id": "x", "name": "x", "defaultStickiness": ""},
            "/body/defaultStickiness",
            "The `/body/defaultStickiness` property must NOT have fewer than 1 characters. "
            'You sent "".',
            id="stickiness-empty",
        ),
        pytest.param(
            {"id": "x", "name": "x", "environments": "production"},
            "/body/environments",
            'The `/body/environments` property must be array. You sent "production".',
            id="environments-not-a-list",
        ),
        pytest.param(
            {"id": "x", "name": "x", "environments": ["production", "nope"]},
            "/body/environments/1",
            "The `/body/environments/1` property must be the name of an existing environment. "
            'You sent "nope".',
            id="environment-unknown",
        ),
        pytest.param(
            {"id": "x", "name": "x", "environments": [5]},
            "/body/environments/0",
            "The `/body/environments/0` property must be string. You sent 5.",
            id="environment-number",
        ),
    ],
)
def test_create_project__invalid_body__400(admin_client, body, path, message):
    response = post(admin_client, URL, body)

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [{"path": path, "message": message}]
    assert not Project.objects.filter(pk="x").exists()


def test_create_project__several_failures__one_detail_each(admin_client):
    response = post(admin_client, URL, {"id": "a b", "mode": "x"})

    error = assert_error(response, 400, "ValidationError")
    assert [d["path"] for d in error["details"]] == ["/body/id", "/body/name", "/body/mode"]


@pytest.mark.parametrize("body", ["[]", '"project"', "5", "null", ""])
def test_create_project__body_not_an_object__400(admin_client, body):
    response = admin_client.post(URL, body, content_type="application/json")

    assert_error(response, 400, "ValidationError")


def test_create_project__malformed_json__400(admin_client):
    response = admin_client.post(URL, '{"id": ', content_type="application/json")

    assert_error(response, 400, "ValidationError")


def test_create_project__anonymous__401(anon_client):
    assert_error(post(anon_client, URL, {"id": "x", "name": "x"}), 401, "AuthenticationRequired")


@pytest.mark.parametrize("principal", ["viewer_client", "client_token_client"])
def test_create_project__viewer_or_client_token__403(request, principal):
    client = request.getfixturevalue(principal)

    response = post(client, URL, {"id": "x", "name": "x"})

    body = assert_error(response, 403, "NoAccessError")
    assert body["permissions"] == ["CREATE_PROJECT"]
    assert not Project.objects.filter(pk="x").exists()


def test_create_project__viewer_who_owns_a_project__still_403(viewer_client):
    ProjectRoleAssignmentFactory(project_id="default", user=viewer_client.user)

    response = post(viewer_client, URL, {"id": "x", "name": "x"})

    assert_error(response, 403, "NoAccessError")


@pytest.mark.parametrize(
    ("content_type", "shown"),
    [("text/plain", "text/plain"), ("", "you didn't provide one")],
)
def test_create_project__not_json__415(admin_client, content_type, shown):
    response = admin_client.generic(
        "POST", URL, '{"id": "x", "name": "x"}', content_type=content_type
    )

    body = assert_error(response, 415, "ContentTypeerror")
    assert f"({shown})" in body["message"]


def test_create_project__viewer_with_wrong_content_type__403_first(viewer_client):
    response = viewer_client.generic("POST", URL, "x", content_type="text/plain")

    assert_error(response, 403, "NoAccessError")


# --- GET one ---------------------------------------------------------------------------------


def test_get_project__as_listed_with_environments(viewer_client):
    ProjectFactory(id="seen", name="Seen")

    response = viewer_client.get(f"{URL}/seen")

    assert response.status_code == 200
    listed = {p["id"]: p for p in viewer_client.get(URL).json()["projects"]}["seen"]
    assert response.json() == {**listed, "environments": ["development", "production"]}


def test_get_project__unknown__404(admin_client):
    body = assert_error(admin_client.get(f"{URL}/nope"), 404, "NotFoundError")
    assert body["message"] == "Project with id nope does not exist"


def test_get_project__wrong_method__405(admin_client):
    response = admin_client.put(f"{URL}/default", {}, format="json")

    assert_error(response, 405, "MethodNotAllowedError")


# --- archive and revive ----------------------------------------------------------------------


def test_archive_project__200_listed_only_as_archived_event(admin_client):
    ProjectFactory(id="old")

    response = post(admin_client, f"{URL}/archive/old")

    assert response.status_code == 200, response.content
    project = Project.objects.get(pk="old")
    assert project.archived_at is not None
    assert response.json()["archivedAt"] == project.archived_at.isoformat().replace("+00:00", "Z")
    active = [p["id"] for p in admin_client.get(URL).json()["projects"]]
    archived = [p["id"] for p in admin_client.get(f"{URL}?archived=true").json()["projects"]]
    assert (active, archived) == (["default"], ["old"])
    event = AuditEvent.objects.get(type="project-archived")
    assert (event.project, event.created_by) == ("old", "admin-tok")
    # Event data writes the moment as the response does (`Z`, not `+00:00`).
    assert event.data == {"id": "old", "archivedAt": response.json()["archivedAt"]}


def test_archive_project__twice__same_time_one_event(admin_client):
    ProjectFactory(id="old")
    post(admin_client, f"{URL}/archive/old")
    first = Project.objects.get(pk="old").archived_at

    response = post(admin_client, f"{URL}/archive/old")

    assert response.status_code == 200
    assert Project.objects.get(pk="old").archived_at == first
    assert AuditEvent.objects.filter(type="project-archived").count() == 1


def test_archive_project__then_new_flag__404(admin_client):
    ProjectFactory(id="old")
    post(admin_client, f"{URL}/archive/old")

    response = post(admin_client, f"{URL}/old/features", {"name": "late"})

    assert_error(response, 404, "NotFoundError")


def test_revive_project__200_active_again_event(admin_client):
    ProjectFactory(id="back", archived_at="2024-01-01T00:00:00Z")

    response = post(admin_client, f"{URL}/revive/back")

    assert response.status_code == 200, response.content
    assert response.json()["archivedAt"] is None
    assert Project.objects.get(pk="back").archived_at is None
    assert "back" in [p["id"] for p in admin_client.get(URL).json()["projects"]]
    assert AuditEvent.objects.filter(type="project-revived", project="back").count() == 1


def test_revive_project__active__200_nothing_recorded(admin_client):
    response = post(admin_client, f"{URL}/revive/default")

    assert response.status_code == 200
    assert not AuditEvent.objects.filter(type="project-revived").exists()


@pytest.mark.parametrize("action", ["archive", "revive"])
def test_archive_or_revive__unknown_project__404(admin_client, action):
    assert_error(post(admin_client, f"{URL}/{action}/nope"), 404, "NotFoundError")


@pytest.mark.parametrize("action", ["archive", "revive"])
@pytest.mark.parametrize("principal", ["editor_client", "viewer_client", "client_token_client"])
def test_archive_or_revive__not_admin__403(request, action, principal):
    client = request.getfixturevalue(principal)

    body = assert_error(post(client, f"{URL}/{action}/default"), 403, "NoAccessError")
    assert body["permissions"] == ["ADMIN"]
    assert Project.objects.get(pk="default").archived_at is None


def test_archive_project__project_owner__403(editor_client):
    ProjectRoleAssignmentFactory(project_id="default", user=editor_client.user)

    assert_error(post(editor_client, f"{URL}/archive/default"), 403, "NoAccessError")


@pytest.mark.parametrize("action", ["archive", "revive"])
def test_archive_or_revive__anonymous__401(anon_client, action):
    assert_error(post(anon_client, f"{URL}/{action}/default"), 401, "AuthenticationRequired")


@pytest.mark.parametrize("action", ["archive", "revive"])
def test_archive_or_revive__not_json__415(admin_client, action):
    response = admin_client.generic(
        "POST", f"{URL}/{action}/default", "", content_type="text/plain"
    )

    assert_error(response, 415, "ContentTypeerror")


def test_archive_project__admin_user__200(admin_user_client):
    assert post(admin_user_client, f"{URL}/archive/default").status_code == 200
