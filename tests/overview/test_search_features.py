"""GET /api/admin/search/features (Unleash 8.2's searchFeatures)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from features.models import (
    FavoriteFeature,
    FeatureStrategySegment,
    FeatureUsageBucket,
    Segment,
)
from tests.conftest import assert_error
from tests.factories import (
    FeatureDependencyFactory,
    FeatureEnvironmentFactory,
    FeatureFactory,
    FeatureLifecycleStageFactory,
    FeatureStrategyFactory,
    FeatureTagFactory,
    ProjectFactory,
    TagFactory,
    TagTypeFactory,
    UserFactory,
)

URL = "/api/admin/search/features"
T0 = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [feature["name"] for feature in response.json()["features"]]


@pytest.fixture
def flags(db):
    """Five flags in two projects, created a day apart (a-e), and an archived one."""
    ProjectFactory(id="other")
    made = {}
    for day, (name, project, kind, stale) in enumerate(
        [
            ("a-release", "default", "release", False),
            ("b-ops", "other", "operational", False),
            ("c-stale", "default", "release", True),
            ("d-kill", "other", "kill-switch", False),
            ("e-recent", "default", "experiment", False),
        ]
    ):
        created = T0 + timedelta(days=day) if name != "e-recent" else timezone.now()
        made[name] = FeatureFactory(
            name=name, project_id=project, type=kind, stale=stale, created_at=created
        )
    made["z-archived"] = FeatureFactory(
        name="z-archived", created_at=T0, archived_at=T0 + timedelta(days=1)
    )
    return made


def test_search__one_flag__whole_body(admin_client, db):
    creator = UserFactory(name="Ada", image_url="https://example.com/ada.png")
    flag = FeatureFactory(
        name="checkout", description="The new checkout", created_at=T0, created_by=creator
    )
    development = FeatureEnvironmentFactory(
        feature=flag, environment_id="development", enabled=True, variants=[{"name": "v"}]
    )
    FeatureEnvironmentFactory(feature=flag, environment_id="production")
    strategy = FeatureStrategyFactory(feature_environment=development)
    FeatureStrategySegment.objects.create(
        strategy=strategy, segment=Segment.objects.create(name="beta")
    )
    FeatureTagFactory(feature=flag, tag=TagFactory(value="team-red"))
    FeatureLifecycleStageFactory(feature=flag, stage="initial", entered_at=T0)
    FeatureLifecycleStageFactory(feature=flag, stage="live", entered_at=T0 + timedelta(days=2))
    FeatureDependencyFactory(parent=flag, child=FeatureFactory(name="child", created_at=T0))
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    FeatureUsageBucket.objects.create(
        feature_name="checkout", environment="development", app_name="web", hour=hour, yes=3, no=1
    )
    FeatureUsageBucket.objects.create(  # older than an hour: not counted
        feature_name="checkout",
        environment="development",
        app_name="web",
        hour=hour - timedelta(hours=3),
        yes=50,
    )

    response = admin_client.get(URL, {"query": "checkout"})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "features": [
            {
                "type": "release",
                "description": "The new checkout",
                "project": "default",
                "favorite": False,
                "name": "checkout",
                "createdAt": "2026-01-10T12:00:00Z",
                "stale": False,
                "archivedAt": None,
                "impressionData": False,
                "dependencyType": "parent",
                "environments": [
                    {
                        "name": "development",
                        "enabled": True,
                        "type": "development",
                        "sortOrder": 100,
                        "variantCount": 1,
                        "lastSeenAt": None,
                        "hasStrategies": True,
                        "hasEnabledStrategies": True,
                        "yes": 3,
                        "no": 1,
                        "changeRequestIds": [],
                    },
                    {
                        "name": "production",
                        "enabled": False,
                        "type": "production",
                        "sortOrder": 200,
                        "variantCount": 0,
                        "lastSeenAt": None,
                        "hasStrategies": False,
                        "hasEnabledStrategies": False,
                        "yes": 0,
                        "no": 0,
                        "changeRequestIds": [],
                    },
                ],
                "segments": ["beta"],
                "createdBy": {
                    "id": creator.id,
                    "name": "Ada",
                    "imageUrl": "https://example.com/ada.png",
                },
                "lifecycle": {"stage": "live", "enteredStageAt": "2026-01-12T12:00:00Z"},
                "tags": [{"value": "team-red", "type": "simple", "color": "#FFFFFF"}],
            }
        ],
        "total": 1,
    }


def test_search__child_without_tags_or_stage__no_tags_or_lifecycle_key(admin_client, db):
    FeatureDependencyFactory(parent=FeatureFactory(name="parent"), child=FeatureFactory(name="kid"))

    feature = admin_client.get(URL, {"query": "kid"}).json()["features"][0]

    assert feature["dependencyType"] == "child"
    assert feature["createdBy"] is None
    assert "tags" not in feature  # as Unleash: the key only when the flag has tags
    assert "lifecycle" not in feature


def test_search__nothing_asked__active_flags_oldest_first(admin_client, flags):
    response = admin_client.get(URL)

    assert names(response) == ["a-release", "b-ops", "c-stale", "d-kill", "e-recent"]
    assert response.json()["total"] == 5


@pytest.mark.parametrize(
    ("query", "expected_names", "total"),
    [
        pytest.param({"limit": "2"}, ["a-release", "b-ops"], 5, id="first-page"),
        pytest.param({"limit": "2", "offset": "2"}, ["c-stale", "d-kill"], 5, id="second"),
        pytest.param({"limit": "2", "offset": "4"}, ["e-recent"], 5, id="last-page"),
        pytest.param({"offset": "9"}, [], 5, id="past-the-end-total-still-counted"),
    ],
)
def test_search__pages__slice_and_total(admin_client, flags, query, expected_names, total):
    """Past the end, Unleash 8.2 answers `total: 0` (it reads the total from the page's rows)."""
    response = admin_client.get(URL, query)

    assert names(response) == expected_names
    assert response.json()["total"] == total


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"project": "IS:default"}, ["a-release", "c-stale", "e-recent"], id="is"),
        pytest.param({"project": "IS_NOT:default"}, ["b-ops", "d-kill"], id="is-not"),
        pytest.param(
            {"project": "IS_ANY_OF:default, other"},
            ["a-release", "b-ops", "c-stale", "d-kill", "e-recent"],
            id="is-any-of-trimmed",
        ),
        pytest.param({"project": "IS_NONE_OF:default,other"}, [], id="is-none-of"),
        pytest.param(
            {"project": "IS:"},
            ["a-release", "b-ops", "c-stale", "d-kill", "e-recent"],
            id="no-value-no-filter",
        ),
        pytest.param({"type": "IS_ANY_OF:operational,kill-switch"}, ["b-ops", "d-kill"], id="type"),
        pytest.param({"state": "IS:stale"}, ["c-stale"], id="stale"),
        pytest.param(
            {"state": "IS:active"}, ["a-release", "b-ops", "d-kill", "e-recent"], id="active"
        ),
        pytest.param({"state": "IS:potentially-stale"}, ["a-release", "b-ops"], id="potentially"),
        pytest.param(
            {"state": "IS:stale,potentially-stale"},
            ["a-release", "b-ops", "c-stale"],
            id="stale-or-potentially",
        ),
        pytest.param(
            {"state": "IS_NOT:potentially-stale"},
            ["c-stale", "d-kill", "e-recent"],
            id="not-potentially",
        ),
        pytest.param({"archived": "IS:true"}, ["z-archived"], id="archived"),
        pytest.param({"createdAt": "IS_BEFORE:2026-01-12"}, ["a-release", "b-ops"], id="before"),
        pytest.param(
            {"createdAt": "IS_ON_OR_AFTER:2026-01-13"}, ["d-kill", "e-recent"], id="on-or-after"
        ),
        pytest.param({"query": "OPS,kill"}, ["b-ops", "d-kill"], id="query-terms-any-case"),
        pytest.param({"query": "a_r"}, [], id="query-underscore-is-literal"),
        pytest.param(
            {"query": " , "},
            ["a-release", "b-ops", "c-stale", "d-kill", "e-recent"],
            id="query-blank-terms",
        ),
    ],
)
def test_search__filter__matching_flags(admin_client, flags, query, expected):
    assert names(admin_client.get(URL, query)) == expected


@pytest.fixture
def tagged(flags):
    red, blue = TagFactory(value="red"), TagFactory(value="blue")
    FeatureTagFactory(feature=flags["a-release"], tag=red)
    FeatureTagFactory(feature=flags["a-release"], tag=blue)
    FeatureTagFactory(feature=flags["b-ops"], tag=red)
    FeatureTagFactory(
        feature=flags["c-stale"], tag=TagFactory(type=TagTypeFactory(name="team"), value="red")
    )
    return flags


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        pytest.param("INCLUDE:simple:red", ["a-release", "b-ops"], id="include"),
        pytest.param("INCLUDE_ANY_OF:simple:blue,team:red", ["a-release", "c-stale"], id="any"),
        pytest.param("INCLUDE_ALL_OF:simple:red,simple:blue", ["a-release"], id="all-of"),
        # A tag named twice is one tag. Unleash 8.2 compares its count of matching tags with the
        # count of values sent, repeats included, so it answers no flag for these (checked on
        # the reference); all of {red} is every flag tagged red.
        pytest.param(
            "INCLUDE_ALL_OF:simple:red,simple:red", ["a-release", "b-ops"], id="all-of-repeated"
        ),
        pytest.param(
            "INCLUDE_ALL_OF:simple:red,simple: red,simple:blue",
            ["a-release"],
            id="all-of-repeated-spaced",
        ),
        pytest.param("DO_NOT_INCLUDE:simple:red", ["c-stale", "d-kill", "e-recent"], id="not"),
        pytest.param(
            "EXCLUDE_IF_ANY_OF:simple:blue,team:red", ["b-ops", "d-kill", "e-recent"], id="none"
        ),
        pytest.param(
            "EXCLUDE_ALL:simple:red,simple:blue",
            ["b-ops", "c-stale", "d-kill", "e-recent"],
            id="exclude-all",
        ),
        pytest.param(
            "EXCLUDE_ALL:simple:red,simple:red",
            ["c-stale", "d-kill", "e-recent"],
            id="exclude-all-repeated",
        ),
    ],
)
def test_search__tag_filter__matching_flags(admin_client, tagged, tag, expected):
    assert names(admin_client.get(URL, {"tag": tag})) == expected


def test_search__tag_include__shows_all_the_flags_tags(admin_client, tagged):
    """Unleash narrows the tags shown to the matching ones (its filter is on the joined rows);
    the flag's tags are its tags."""
    feature = admin_client.get(URL, {"tag": "INCLUDE:simple:blue"}).json()["features"][0]

    assert [tag["value"] for tag in feature["tags"]] == ["red", "blue"]


def test_search__segment_filter__flags_whose_strategies_use_it(admin_client, flags):
    strategy = FeatureStrategyFactory(
        feature_environment=FeatureEnvironmentFactory(feature=flags["d-kill"])
    )
    FeatureStrategySegment.objects.create(
        strategy=strategy, segment=Segment.objects.create(name="pro")
    )

    assert names(admin_client.get(URL, {"segment": "INCLUDE:pro"})) == ["d-kill"]
    assert "d-kill" not in names(admin_client.get(URL, {"segment": "DO_NOT_INCLUDE:pro"}))


def test_search__status__flags_on_in_the_environment(admin_client, flags):
    FeatureEnvironmentFactory(feature=flags["b-ops"], environment_id="production", enabled=True)
    FeatureEnvironmentFactory(feature=flags["c-stale"], environment_id="production")

    assert names(admin_client.get(URL, {"status": "production:enabled"})) == ["b-ops"]
    assert names(admin_client.get(URL, {"status": "production:disabled"})) == ["c-stale"]


@pytest.mark.parametrize(
    ("lifecycle", "archived", "expected"),
    [
        pytest.param("IS:live", None, ["b-ops"], id="live"),
        pytest.param("IS_ANY_OF:live,archived", None, ["z-archived", "b-ops"], id="with-archived"),
        pytest.param(
            "IS_NOT:live", None, ["a-release", "c-stale", "d-kill", "e-recent"], id="not-live"
        ),
        pytest.param("IS:archived", "IS:true", ["z-archived"], id="archived-view"),
    ],
)
def test_search__lifecycle__latest_stage(admin_client, flags, lifecycle, archived, expected):
    FeatureLifecycleStageFactory(feature=flags["b-ops"], stage="initial", entered_at=T0)
    FeatureLifecycleStageFactory(feature=flags["b-ops"], stage="live", entered_at=T0 + timedelta(1))
    FeatureLifecycleStageFactory(feature=flags["a-release"], stage="initial", entered_at=T0)
    query = {"lifecycle": lifecycle, **({"archived": archived} if archived else {})}

    assert names(admin_client.get(URL, query)) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param(
            {"sortOrder": "desc"},
            ["e-recent", "d-kill", "c-stale", "b-ops", "a-release"],
            id="created-desc",
        ),
        pytest.param(
            {"sortBy": "name", "sortOrder": "desc"},
            ["e-recent", "d-kill", "c-stale", "b-ops", "a-release"],
            id="name-desc",
        ),
        pytest.param(
            {"sortBy": "type"},
            ["e-recent", "d-kill", "b-ops", "a-release", "c-stale"],
            id="type-then-oldest",
        ),
        pytest.param(
            {"sortBy": "project", "sortOrder": "desc"},
            ["b-ops", "d-kill", "a-release", "c-stale", "e-recent"],
            id="project-desc",
        ),
        pytest.param(
            {"sortBy": "stale", "sortOrder": "desc"},
            ["c-stale", "a-release", "b-ops", "d-kill", "e-recent"],
            id="stale-desc",
        ),
        pytest.param(
            {"sortBy": "environment:production", "sortOrder": "desc"},
            ["d-kill", "b-ops", "a-release", "c-stale", "e-recent"],
            id="environment-enabled-first-nulls-last",
        ),
    ],
)
def test_search__sort__unleash_order(admin_client, flags, query, expected):
    FeatureEnvironmentFactory(feature=flags["b-ops"], environment_id="production")
    FeatureEnvironmentFactory(feature=flags["d-kill"], environment_id="production", enabled=True)

    assert names(admin_client.get(URL, query)) == expected


def test_search__favorites_first__the_users_favorites_lead(editor_client, flags):
    FavoriteFeature.objects.create(user=editor_client.user, feature=flags["d-kill"])

    response = editor_client.get(URL, {"favoritesFirst": "true", "limit": "2"})

    assert names(response) == ["d-kill", "a-release"]
    assert [f["favorite"] for f in response.json()["features"]] == [True, False]


@pytest.mark.parametrize(
    ("favorite", "expected"),
    [
        pytest.param("IS:true", ["d-kill"], id="favorites"),
        pytest.param("IS:false", ["a-release", "b-ops", "c-stale", "e-recent"], id="others"),
        pytest.param(
            "IS_ANY_OF:true,false",
            ["a-release", "b-ops", "c-stale", "d-kill", "e-recent"],
            id="both",
        ),
    ],
)
def test_search__favorite_filter__the_users_favorites(editor_client, flags, favorite, expected):
    FavoriteFeature.objects.create(user=editor_client.user, feature=flags["d-kill"])

    assert names(editor_client.get(URL, {"favorite": favorite})) == expected


def test_search__favorite_filter__a_token_has_none(admin_client, flags):
    assert names(admin_client.get(URL, {"favorite": "IS:true"})) == []


@pytest.mark.parametrize(
    ("last_seen", "expected"),
    [
        pytest.param("IS_ON_OR_AFTER:2026-02-01", ["b-ops"], id="on-or-after"),
        pytest.param("IS_BEFORE:2026-02-01", ["c-stale"], id="before-never-seen-left-out"),
    ],
)
def test_search__last_seen_filter__reported_flags(admin_client, flags, last_seen, expected):
    flags["b-ops"].last_seen_at = datetime(2026, 2, 1, tzinfo=UTC)
    flags["b-ops"].save()
    flags["c-stale"].last_seen_at = datetime(2026, 1, 31, 23, 59, tzinfo=UTC)
    flags["c-stale"].save()

    assert names(admin_client.get(URL, {"lastSeenAt": last_seen})) == expected


PATTERN_IS = "^(IS|IS_NOT|IS_ANY_OF|IS_NONE_OF):(.*?)(,([a-zA-Z0-9_]+))*$"


@pytest.mark.parametrize(
    ("query", "path", "message"),
    [
        pytest.param(
            {"project": "default"},
            "/query/project",
            f'The `/query/project` property must match pattern "{PATTERN_IS}". You sent "default".',
            id="project-without-operator",
        ),
        pytest.param(
            {"type": "INCLUDE:release"},
            "/query/type",
            f'The `/query/type` property must match pattern "{PATTERN_IS}". '
            'You sent "INCLUDE:release".',
            id="type-wrong-operator",
        ),
        pytest.param(
            {"tag": "INCLUDE:red"},
            "/query/tag",
            'The `/query/tag` property must match pattern "^(INCLUDE|DO_NOT_INCLUDE|'
            "INCLUDE_ALL_OF|INCLUDE_ANY_OF|EXCLUDE_IF_ANY_OF|EXCLUDE_ALL):([^:,]+:.+?)"
            '(,\\s*[^:,]+:.+?)*$". You sent "INCLUDE:red".',
            id="tag-without-type",
        ),
        pytest.param(
            {"tag": "INCLUDE:simple:red,blue"},
            "/query/tag",
            "The `/query/tag` property must name each tag as `type:value`. "
            'You sent "INCLUDE:simple:red,blue".',
            id="tag-second-without-type",
        ),
        pytest.param(
            {"createdAt": "IS:2026-01-01"},
            "/query/createdAt",
            'The `/query/createdAt` property must match pattern "^(IS_BEFORE|'
            'IS_ON_OR_AFTER):\\d{4}-\\d{2}-\\d{2}$". You sent "IS:2026-01-01".',
            id="created-at-operator",
        ),
        pytest.param(
            {"createdAt": "IS_BEFORE:2026-02-30"},
            "/query/createdAt",
            "The `/query/createdAt` property must name a day that exists. You sent "
            '"IS_BEFORE:2026-02-30".',
            id="created-at-no-such-day",
        ),
        pytest.param(
            {"createdBy": "IS:99999999999999999999"},
            "/query/createdBy",
            "The `/query/createdBy` property must name user ids (whole numbers). "
            'You sent "IS:99999999999999999999".',
            id="created-by-past-bigint",
        ),
        pytest.param(
            {"offset": "99999999999999999999"},
            "/query/offset",
            "The `/query/offset` property must be a whole number of 0 or more. "
            'You sent "99999999999999999999".',
            id="offset-past-bigint",
        ),
        pytest.param(
            {"favorite": "IS:yes"},
            "/query/favorite",
            'The `/query/favorite` property must match pattern "^(IS|IS_ANY_OF):(true|false)'
            '(,(true|false))*$". You sent "IS:yes".',
            id="favorite",
        ),
        pytest.param(
            {"lastSeenAt": "IS_AFTER:2026-01-01"},
            "/query/lastSeenAt",
            'The `/query/lastSeenAt` property must match pattern "^(IS_BEFORE|'
            'IS_ON_OR_AFTER):\\d{4}-\\d{2}-\\d{2}$". You sent "IS_AFTER:2026-01-01".',
            id="last-seen-operator",
        ),
        pytest.param(
            {"archived": "IS:yes"},
            "/query/archived",
            'The `/query/archived` property must match pattern "^IS:(true|false)$". '
            'You sent "IS:yes".',
            id="archived",
        ),
        pytest.param(
            {"state": "IS:weird"},
            "/query/state",
            'The `/query/state` property must name only "active", "stale", '
            '"potentially-stale". You sent "IS:weird".',
            id="state-unknown",
        ),
        pytest.param(
            {"lifecycle": "IS:done"},
            "/query/lifecycle",
            'The `/query/lifecycle` property must name only "initial", "pre-live", '
            '"live", "completed", "archived". You sent "IS:done".',
            id="lifecycle",
        ),
        pytest.param(
            {"createdBy": "IS:ada"},
            "/query/createdBy",
            "The `/query/createdBy` property must name user ids (whole numbers). "
            'You sent "IS:ada".',
            id="created-by-not-an-id",
        ),
        pytest.param(
            {"status": "production:on"},
            "/query/status/0",
            "The `/query/status/0` property must be `<environment>:enabled` or "
            '`:disabled`. You sent "production:on".',
            id="status",
        ),
        pytest.param(
            {"sortBy": "colour"},
            "/query/sortBy",
            'The `/query/sortBy` property must be one of "createdAt", "name", "type", '
            '"stale", "project", "lastSeenAt" or `environment:<name>`. You sent '
            '"colour".',
            id="sort-field-unknown",
        ),
        pytest.param(
            {"sortOrder": "up"},
            "/query/sortOrder",
            "The `/query/sortOrder` property must be equal to one of the allowed "
            'values: "asc", "desc". You sent "up".',
            id="sort-order",
        ),
        pytest.param(
            {"favoritesFirst": "yes"},
            "/query/favoritesFirst",
            'The `/query/favoritesFirst` property must be equal to one of "true", '
            '"false". You sent "yes".',
            id="favorites-first",
        ),
        pytest.param(
            {"offset": "-1"},
            "/query/offset",
            'The `/query/offset` property must be a whole number of 0 or more. You sent "-1".',
            id="negative-offset",
        ),
        pytest.param(
            {"offset": "x"},
            "/query/offset",
            'The `/query/offset` property must be a whole number of 0 or more. You sent "x".',
            id="offset-not-a-number",
        ),
        pytest.param(
            {"limit": "0"},
            "/query/limit",
            'The `/query/limit` property must be from 1 to 100. You sent "0".',
            id="limit-zero",
        ),
        pytest.param(
            {"limit": "101"},
            "/query/limit",
            'The `/query/limit` property must be from 1 to 100. You sent "101".',
            id="limit-over-100",
        ),
        pytest.param(
            {"limit": "1.5"},
            "/query/limit",
            'The `/query/limit` property must be a whole number. You sent "1.5".',
            id="limit-fraction",
        ),
        pytest.param(
            {"project": ["IS:a", "IS:b"]},
            "/query/project",
            'The `/query/project` property must be string. You sent ["IS:a", "IS:b"].',
            id="repeated",
        ),
    ],
)
def test_search__invalid_query__400_naming_it(admin_client, db, query, path, message):
    """Unleash 8.2 refuses the pattern mismatches alike (as BadDataError); it takes a negative
    or unreadable offset as 0, a limit out of range as 50, an unknown sortBy as createdAt, an
    unknown state as stale and a malformed status as none; a day that does not exist, a user id
    past bigint or a tag without its type fail in its database (500, UnknownError quoting the
    SQL): each is a 400 here."""
    body = assert_error(admin_client.get(URL, query), 400, "ValidationError")

    assert body["details"] == [{"path": path, "message": message}]
    assert body["message"] == message


def test_search__page_of_many_flags__fixed_number_of_queries(
    admin_client, flags, django_assert_max_num_queries
):
    for flag in flags.values():
        FeatureEnvironmentFactory(feature=flag, environment_id="development")
        FeatureTagFactory(feature=flag)
        FeatureLifecycleStageFactory(feature=flag)
    admin_client.get(URL)  # the token's first use writes its seenAt

    # the token lookup; on PostgreSQL the search's SET LOCAL; the count, the page, then usage,
    # environments, tags, segments, stages and dependencies of the page's flags
    with django_assert_max_num_queries(10):
        assert len(names(admin_client.get(URL, {"tag": "INCLUDE:simple:tag-0"}))) <= 1
    with django_assert_max_num_queries(10):
        assert len(names(admin_client.get(URL))) == 5


def test_search__viewer__may_search(viewer_client, flags):
    assert names(viewer_client.get(URL, {"limit": "1"})) == ["a-release"]


def test_search__anonymous__401(anon_client, db):
    assert_error(anon_client.get(URL), 401, "AuthenticationRequired")


def test_search__client_token__403(client_token_client):
    assert_error(client_token_client.get(URL), 403, "NoAccessError")


def test_search__postgresql__text_search_indexes_exist(db):
    """The migration makes the trigram indexes `query` reads on PostgreSQL (docs/search.md)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'features_feature' "
            "AND indexname LIKE 'feature_%%_trgm' ORDER BY indexname"
        )
        found = cursor.fetchall()

    assert [name for name, _ in found] == ["feature_description_trgm", "feature_name_trgm"]
    assert all("gin_trgm_ops" in definition for _, definition in found)
