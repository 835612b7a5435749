"""GET /api/admin/projects: every computed field on hand-built data, the archived filter, the
order, the errors, and a number of queries that does not grow with the data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from features.models import FeatureType
from flagadmin.core.models import Role
from overview.project_figures import (
    AGING_COLUMNS,
    COLUMN,
    FIGURE_COLUMNS,
    _figures_sql,
    _params,
    _select_list,
    health,
    scope_condition,
)
from projects.models import Project
from projects.serializers import ProjectSchemaSerializer
from tests.conftest import assert_error
from tests.factories import (
    AuditEventFactory,
    FavoriteProjectFactory,
    FeatureFactory,
    GroupFactory,
    GroupMembershipFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
)

URL = "/api/admin/projects"
pytestmark = pytest.mark.django_db


def iso(moment: datetime | None) -> str | None:
    """How the API writes a datetime (as DRF's DateTimeField)."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def listed(client, query: str = "") -> dict[str, dict]:
    response = client.get(URL + query)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["version"] == 1
    return {project["id"]: project for project in body["projects"]}


def days_ago(days: float) -> datetime:
    return timezone.now() - timedelta(days=days)


# --- the whole object ------------------------------------------------------------------------


def test_list_projects__fresh_instance__default_project_with_its_figures(admin_client):
    default = Project.objects.get(pk="default")

    response = admin_client.get(URL)

    assert response.status_code == 200
    assert response.json() == {
        "version": 1,
        "projects": [
            {
                "id": "default",
                "name": "Default",
                "description": "Default project",
                "health": 100,
                "featureCount": 0,
                "staleFeatureCount": 0,
                "potentiallyStaleFeatureCount": 0,
                "memberCount": 0,
                "favorite": False,
                "mode": "open",
                "defaultStickiness": "default",
                "createdAt": iso(default.created_at),
                "updatedAt": None,
                "lastUpdatedAt": None,
                "archivedAt": None,
                "lastReportedFlagUsage": None,
                "owners": [{"ownerType": "system"}],
            }
        ],
    }


def test_list_projects__keys__are_the_documented_project_schema(admin_client):
    project = listed(admin_client)["default"]

    assert set(project) == set(ProjectSchemaSerializer().fields)


def test_flag_types__expected_lifetimes():
    lifetimes = {kind.value: kind.expected_lifetime for kind in FeatureType}

    assert lifetimes == {
        "release": timedelta(days=40),
        "experiment": timedelta(days=40),
        "operational": timedelta(days=7),
        "kill-switch": None,
        "permission": None,
    }


# --- flag counts and health -----------------------------------------------------------------


@pytest.fixture
def project_with_flags():
    """Flags of every type and state. Non-archived: 9, of which stale 2 and potentially
    stale 3 (old release, old experiment, 8-day operational)."""
    project = ProjectFactory(id="flags")
    for name, kind, age, stale, archived in [
        ("fresh-release", "release", 1, False, False),
        ("old-release", "release", 41, False, False),
        ("old-experiment", "experiment", 41, False, False),
        ("old-operational", "operational", 8, False, False),
        ("young-operational", "operational", 6, False, False),
        ("ancient-kill-switch", "kill-switch", 400, False, False),
        ("ancient-permission", "permission", 400, False, False),
        ("stale-release", "release", 100, True, False),
        ("stale-kill-switch", "kill-switch", 2, True, False),
        ("archived-old-release", "release", 100, False, True),
        ("archived-stale", "experiment", 100, True, True),
    ]:
        FeatureFactory(
            name=name,
            project_id=project.pk,
            type=kind,
            created_at=days_ago(age),
            stale=stale,
            archived_at=days_ago(1) if archived else None,
        )
    return project


def test_list_projects__flags_of_every_kind__counts_and_health(admin_client, project_with_flags):
    project = listed(admin_client)["flags"]

    assert project["featureCount"] == 9
    assert project["staleFeatureCount"] == 2
    assert project["potentiallyStaleFeatureCount"] == 3
    # round(100 - 2/9 - 3/9 in %) = round(44.4)
    assert project["health"] == 44


def test_list_projects__only_archived_flags__zero_counts_full_health(admin_client):
    project = ProjectFactory(id="all-archived")
    FeatureFactory(project_id=project.pk, archived_at=days_ago(1), stale=True)

    listed_project = listed(admin_client)["all-archived"]

    assert listed_project["featureCount"] == 0
    assert listed_project["staleFeatureCount"] == 0
    assert listed_project["health"] == 100


def test_list_projects__flag_crosses_its_lifetime__potentially_stale_from_then(admin_client):
    project = ProjectFactory(id="ageing")
    FeatureFactory(
        project_id=project.pk, type="operational", created_at=days_ago(7) + timedelta(hours=1)
    )
    FeatureFactory(
        project_id=project.pk, type="operational", created_at=days_ago(7) - timedelta(hours=1)
    )

    assert listed(admin_client)["ageing"]["potentiallyStaleFeatureCount"] == 1


@pytest.mark.parametrize(
    ("count", "stale", "potentially_stale", "expected"),
    [
        pytest.param(0, 0, 0, 100, id="no-flags"),
        pytest.param(4, 0, 0, 100, id="all-healthy"),
        pytest.param(4, 1, 1, 50, id="half"),
        pytest.param(8, 1, 0, 88, id="87.5-rounds-up"),
        pytest.param(3, 1, 0, 67, id="66.7-rounds-up"),
        pytest.param(3, 1, 1, 33, id="33.3-rounds-down"),
        pytest.param(2, 2, 0, 0, id="all-stale"),
        pytest.param(200, 1, 0, 100, id="99.5-rounds-up"),
    ],
)
def test_health__rounding(count, stale, potentially_stale, expected):
    assert health(count, stale, potentially_stale) == expected


# --- members and owners ---------------------------------------------------------------------


def test_list_projects__members__direct_and_through_groups_each_user_once(admin_client):
    project = ProjectFactory(id="team")
    alice, bob, carol = UserFactory(), UserFactory(), UserFactory()
    ProjectRoleAssignmentFactory(project=project, role_id=Role.OWNER, user=alice)
    ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, user=alice)
    ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, user=bob)
    group = GroupFactory()
    GroupMembershipFactory(group=group, user=alice)
    GroupMembershipFactory(group=group, user=carol)
    ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, group=group)
    ProjectRoleAssignmentFactory(project=project, role_id=Role.OWNER, group=GroupFactory())
    # Elsewhere: a member of another project, and a user with a root role only.
    ProjectRoleAssignmentFactory(project=ProjectFactory(), role_id=Role.MEMBER, user=UserFactory())
    UserFactory(root_role_id=Role.ADMIN)

    projects = listed(admin_client)

    assert projects["team"]["memberCount"] == 3
    assert projects["default"]["memberCount"] == 0


def test_list_projects__owners__users_by_assignment_time_then_groups(admin_client):
    project = ProjectFactory(id="owned")
    start = timezone.now() - timedelta(days=3)
    late_user = UserFactory(name="Late", email="late@example.com", image_url="https://img/l")
    early_user = UserFactory(name=None, username="early", email="early@example.com")
    group = GroupFactory(name="Platform")
    ProjectRoleAssignmentFactory(
        project=project, user=late_user, created_at=start + timedelta(hours=2)
    )
    ProjectRoleAssignmentFactory(project=project, group=group, created_at=start)
    ProjectRoleAssignmentFactory(
        project=project, user=early_user, created_at=start + timedelta(hours=1)
    )
    # Members are not owners.
    ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, user=UserFactory())

    owners = listed(admin_client)["owned"]["owners"]

    assert owners == [
        {"ownerType": "user", "name": "early", "email": "early@example.com", "imageUrl": None},
        {
            "ownerType": "user",
            "name": "Late",
            "email": "late@example.com",
            "imageUrl": "https://img/l",
        },
        {"ownerType": "group", "name": "Platform"},
    ]


def test_list_projects__only_members__owner_is_system(admin_client):
    project = ProjectFactory(id="unowned")
    ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, user=UserFactory())

    assert listed(admin_client)["unowned"]["owners"] == [{"ownerType": "system"}]


# --- times -----------------------------------------------------------------------------------


def test_list_projects__last_updated_at__newest_event_about_a_flag_of_the_project(admin_client):
    project = ProjectFactory(id="events")
    FeatureFactory(name="live", project_id=project.pk)
    FeatureFactory(name="retired", project_id=project.pk, archived_at=days_ago(1))
    FeatureFactory(name="elsewhere", project_id=ProjectFactory().pk)
    counted = days_ago(2)
    AuditEventFactory(project="events", feature_name="live", created_at=days_ago(5))
    AuditEventFactory(project="events", feature_name="retired", created_at=counted)
    # Not about a flag of the project: project-level, a flag no longer there, another
    # project's flag, or the flag's events in another project.
    AuditEventFactory(project="events", feature_name=None, created_at=days_ago(1))
    AuditEventFactory(project="events", feature_name="deleted-flag", created_at=days_ago(1))
    AuditEventFactory(project="events", feature_name="elsewhere", created_at=days_ago(1))
    AuditEventFactory(project="default", feature_name="live", created_at=days_ago(1))

    projects = listed(admin_client)

    assert projects["events"]["lastUpdatedAt"] == iso(counted)
    assert projects["default"]["lastUpdatedAt"] is None


def test_list_projects__last_reported_flag_usage__newest_last_seen_archived_included(
    admin_client,
):
    project = ProjectFactory(id="usage")
    newest = days_ago(1)
    FeatureFactory(project_id=project.pk, last_seen_at=days_ago(3))
    FeatureFactory(project_id=project.pk, last_seen_at=newest, archived_at=days_ago(2))
    FeatureFactory(project_id=project.pk, last_seen_at=None)
    FeatureFactory(project_id=ProjectFactory(id="unused").pk, last_seen_at=None)

    projects = listed(admin_client)

    assert projects["usage"]["lastReportedFlagUsage"] == iso(newest)
    assert projects["unused"]["lastReportedFlagUsage"] is None


def test_list_projects__stored_fields__as_stored(admin_client):
    created = datetime(2024, 2, 29, 12, 30, 15, 250000, tzinfo=UTC)
    ProjectFactory(
        id="stored",
        name="Stored",
        description=None,
        mode="protected",
        default_stickiness="userId",
        created_at=created,
        updated_at=created + timedelta(days=1),
    )

    project = listed(admin_client)["stored"]

    assert project["description"] is None
    assert project["mode"] == "protected"
    assert project["defaultStickiness"] == "userId"
    assert project["createdAt"] == "2024-02-29T12:30:15.250000Z"
    assert project["updatedAt"] == "2024-03-01T12:30:15.250000Z"


# --- favorite --------------------------------------------------------------------------------


def test_list_projects__user_favorites__true_for_that_users_favorites(viewer_client):
    ProjectFactory(id="liked")
    ProjectFactory(id="other")
    FavoriteProjectFactory(user=viewer_client.user, project_id="liked")
    FavoriteProjectFactory(user=UserFactory(), project_id="other")

    projects = listed(viewer_client)

    assert projects["liked"]["favorite"] is True
    assert projects["other"]["favorite"] is False
    assert projects["default"]["favorite"] is False


def test_list_projects__admin_token__favorite_false(admin_client):
    FavoriteProjectFactory(project_id="default")

    assert listed(admin_client)["default"]["favorite"] is False


# --- archived filter -------------------------------------------------------------------------


@pytest.fixture
def archived_project():
    return ProjectFactory(id="old", archived_at=days_ago(3))


@pytest.mark.parametrize("query", ["", "?archived=false"])
def test_list_projects__active__archived_projects_left_out(admin_client, archived_project, query):
    assert set(listed(admin_client, query)) == {"default"}


def test_list_projects__archived_true__only_archived_with_archived_at(
    admin_client, archived_project
):
    projects = listed(admin_client, "?archived=true")

    assert set(projects) == {"old"}
    assert projects["old"]["archivedAt"] == iso(archived_project.archived_at)


@pytest.mark.parametrize(
    ("query", "sent"),
    [
        pytest.param("archived=yes", '"yes"', id="yes"),
        pytest.param("archived=1", '"1"', id="one"),
        pytest.param("archived=0", '"0"', id="zero"),
        pytest.param("archived=TRUE", '"TRUE"', id="upper-case"),
        pytest.param("archived=True", '"True"', id="capitalised"),
        pytest.param("archived=", '""', id="empty"),
        pytest.param("archived=%C3%A9", '"é"', id="non-ascii"),
        pytest.param("archived=true&archived=false", '["true", "false"]', id="repeated"),
    ],
)
def test_list_projects__archived_not_a_boolean__400(admin_client, query, sent):
    response = admin_client.get(f"{URL}?{query}")

    body = assert_error(response, 400, "ValidationError")
    message = f"The `/query/archived` property must be boolean. You sent {sent}."
    assert body["message"] == message
    assert body["details"] == [{"path": "/query/archived", "message": message}]


# --- order -----------------------------------------------------------------------------------


def test_list_projects__order__name_case_insensitively_then_id(admin_client):
    for project_id, name in [
        ("z-alpha", "alpha"),
        ("a-alpha", "Alpha"),
        ("beta", "BETA"),
        ("b-beta", "beta"),
        ("zeta", "Zeta"),
        ("eclair", "Éclair"),
        ("emile", "émile"),
        ("underscore", "_under"),
        ("digits", "10 apps"),
    ]:
        ProjectFactory(id=project_id, name=name)

    response = admin_client.get(URL)

    ids = [project["id"] for project in response.json()["projects"]]
    # Unicode case folding, then code point order ("_" after letters' upper case, "é" after
    # "z"), then id for equal folded names: the same on SQLite and PostgreSQL.
    assert ids == [
        "digits",
        "underscore",
        "a-alpha",
        "z-alpha",
        "b-beta",
        "beta",
        "default",
        "zeta",
        "eclair",
        "emile",
    ]


# --- who may list ----------------------------------------------------------------------------


def test_list_projects__anonymous__401(anon_client):
    assert_error(anon_client.get(URL), 401, "AuthenticationRequired")


def test_list_projects__client_token__403(client_token_client):
    assert_error(client_token_client.get(URL), 403, "NoAccessError")


@pytest.mark.parametrize("principal", ["viewer_client", "editor_client", "admin_user_client"])
def test_list_projects__any_root_role__200(request, principal):
    client = request.getfixturevalue(principal)

    assert "default" in listed(client)


# --- the number of queries -------------------------------------------------------------------


def build_instance(projects: int, flags_per_project: int) -> None:
    """Projects with flags, owners and members (users and groups), events and favorites."""
    group = GroupFactory()
    GroupMembershipFactory.create_batch(3, group=group)
    for index in range(projects):
        project = ProjectFactory()
        ProjectRoleAssignmentFactory(project=project, user=UserFactory())
        ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, group=group)
        for number in range(flags_per_project):
            flag = FeatureFactory(
                project_id=project.pk,
                type=["release", "operational", "kill-switch"][number % 3],
                stale=number % 4 == 0,
                created_at=days_ago(number * 5),
                last_seen_at=days_ago(1) if number % 2 else None,
            )
            AuditEventFactory(project=project.pk, feature_name=flag.name)
        FavoriteProjectFactory(project=project)
        if index % 2:
            FavoriteProjectFactory(project=project)


@pytest.mark.parametrize(
    ("projects", "flags_per_project"),
    [pytest.param(2, 2, id="small"), pytest.param(15, 12, id="larger")],
)
@pytest.mark.parametrize("principal", ["admin_client", "viewer_client"])
def test_list_projects__query_count__same_bound_at_every_size(
    request, django_assert_max_num_queries, projects, flags_per_project, principal
):
    build_instance(projects, flags_per_project)
    client = request.getfixturevalue(principal)
    client.get(URL)  # a token's first use records its last-use time: one write, once

    # The token; on PostgreSQL the transaction's settings; the projects with their figures;
    # the owners; the caller's favorites: never one query per project or flag.
    with django_assert_max_num_queries(5):
        response = client.get(URL)

    assert response.status_code == 200
    assert len(response.json()["projects"]) == projects + 1


@pytest.mark.parametrize("few", [False, True], ids=["scan", "few"])
@pytest.mark.parametrize("aging", [False, True], ids=["figures", "aging"])
def test_figures_statement__every_variant__its_columns_named_as_declared(few, aging):
    ProjectFactory(id="named", name="Named")
    statement = _figures_sql(scope_condition("ids", 1), connection.vendor, aging, few)

    with connection.cursor() as cursor:
        cursor.execute(statement, _params(timezone.now(), None, ["named"]))
        names = [column[0] for column in cursor.description]
        rows = cursor.fetchall()

    declared = FIGURE_COLUMNS + (AGING_COLUMNS if aging else ())
    assert names == [figure.name for figure in declared]
    assert [(row[COLUMN["id"]], row[COLUMN["name"]]) for row in rows] == [("named", "Named")]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda expressions: expressions.pop("member_count"), id="one-missing"),
        pytest.param(lambda expressions: expressions.update(extra="1"), id="one-undeclared"),
    ],
)
def test_figures_select_list__expressions_other_than_the_declared_columns__refused(change):
    expressions = {figure.name: "NULL" for figure in FIGURE_COLUMNS}
    change(expressions)

    with pytest.raises(ValueError, match="expressions for"):
        _select_list(expressions, aging=False)
