"""GET /api/admin/search/events (Unleash 8.2's searchEvents)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import assert_error
from tests.factories import AuditEventFactory

URL = "/api/admin/search/events"
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [event["id"] for event in response.json()["events"]]


@pytest.fixture
def events(db):
    """Six events a day apart (e1 oldest); e5 and e6 share their time, e6 comes first (id)."""
    specs = [
        ("feature-created", "f1", "default", None, 1, {"name": "f1"}),
        ("feature-environment-enabled", "f1", "default", "production", 1, None),
        ("feature-created", "f2", "other", None, 2, {"name": "f2", "note": "Blue Sky"}),
        ("api-token-created", None, None, None, -42, {"tokenName": "ci"}),
        ("feature-archived", "f2", "other", None, 2, None),
        ("feature-tagged", "f1", "default", None, 1, None),
    ]
    made = {}
    for index, (kind, flag, project, environment, user, data) in enumerate(specs, start=1):
        made[f"e{index}"] = AuditEventFactory(
            type=kind,
            feature_name=flag,
            project=project,
            environment=environment,
            created_by_user_id=user,
            created_by="someone",
            created_at=T0 + timedelta(days=min(index, 5) - 1),
            data=data,
            tags=[{"type": "simple", "value": "team-red"}] if index == 6 else [],
        )
    return made


def test_search_events__one_event__whole_body(admin_client, events):
    response = admin_client.get(URL, {"limit": "1"})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "events": [
            {
                "id": events["e6"].id,
                "type": "feature-tagged",
                "createdBy": "someone",
                "createdAt": "2026-03-05T10:00:00Z",
                "createdByUserId": 1,
                "data": None,
                "preData": None,
                "tags": [{"type": "simple", "value": "team-red"}],
                "featureName": "f1",
                "project": "default",
                "environment": None,
            }
        ],
        "total": 6,
    }


def test_search_events__nothing_asked__newest_first_then_by_id(admin_client, events):
    assert ids(admin_client.get(URL)) == [
        events[name].id for name in ("e6", "e5", "e4", "e3", "e2", "e1")
    ]


@pytest.mark.parametrize(
    ("query", "expected", "total"),
    [
        pytest.param({"limit": "2"}, ["e6", "e5"], 6, id="first-page"),
        pytest.param({"limit": "2", "offset": "4"}, ["e2", "e1"], 6, id="last-page"),
        pytest.param({"offset": "10"}, [], 6, id="past-the-end"),
        pytest.param({"limit": "1000"}, ["e6", "e5", "e4", "e3", "e2", "e1"], 6, id="max-limit"),
    ],
)
def test_search_events__pages__slice_and_total(admin_client, events, query, expected, total):
    response = admin_client.get(URL, query)

    assert ids(response) == [events[name].id for name in expected]
    assert response.json()["total"] == total


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"feature": "IS:f2"}, ["e5", "e3"], id="feature"),
        pytest.param({"feature": "IS_ANY_OF:f2, f9"}, ["e5", "e3"], id="feature-any-of"),
        pytest.param({"project": "IS:default"}, ["e6", "e2", "e1"], id="project"),
        pytest.param({"type": "IS:feature-created"}, ["e3", "e1"], id="type"),
        pytest.param({"environment": "IS:production"}, ["e2"], id="environment"),
        pytest.param({"createdBy": "IS:-42"}, ["e4"], id="created-by"),
        pytest.param({"createdBy": "IS_ANY_OF:1,2"}, ["e6", "e5", "e3", "e2", "e1"], id="users"),
        pytest.param({"from": "IS:2026-03-04"}, ["e6", "e5", "e4"], id="from-day-included"),
        pytest.param({"to": "IS:2026-03-02"}, ["e2", "e1"], id="to-day-included"),
        pytest.param({"from": "IS:2026-03-02", "to": "IS:2026-03-03"}, ["e3", "e2"], id="range"),
        pytest.param({"query": "blue sky"}, ["e3"], id="query-in-data-any-case"),
        pytest.param({"query": "TEAM-red"}, ["e6"], id="query-in-tags"),
        pytest.param({"query": "%"}, [], id="query-percent-literal"),
        pytest.param(
            {"to": "IS:9999-12-31"}, ["e6", "e5", "e4", "e3", "e2", "e1"], id="to-last-day"
        ),
        pytest.param({"feature": "IS:"}, ["e6", "e5", "e4", "e3", "e2", "e1"], id="empty-value"),
    ],
)
def test_search_events__filter__matching_events(admin_client, events, query, expected):
    assert ids(admin_client.get(URL, query)) == [events[name].id for name in expected]


def test_search_events__id_filter__those_events(admin_client, events):
    wanted = f"IS_ANY_OF:{events['e1'].id},{events['e4'].id}"

    assert ids(admin_client.get(URL, {"id": wanted})) == [events["e4"].id, events["e1"].id]


def test_search_events__query_in_previous_data(admin_client, db):
    event = AuditEventFactory(pre_data={"description": "Old words"}, data={"description": "new"})

    assert ids(admin_client.get(URL, {"query": "old WORDS"})) == [event.id]


def test_search_events__viewer__only_events_of_projects(viewer_client, events):
    """As Unleash: callers who are not root admins do not see events outside projects."""
    response = viewer_client.get(URL)

    assert events["e4"].id not in ids(response)
    assert response.json()["total"] == 5


def test_search_events__admin_user__sees_every_event(admin_user_client, events):
    assert admin_user_client.get(URL).json()["total"] == 6


@pytest.mark.parametrize(
    ("query", "path", "message"),
    [
        pytest.param(
            {"feature": "f1"},
            "/query/feature",
            'The `/query/feature` property must match pattern "^(IS|IS_ANY_OF):(.*?)'
            '(,([a-zA-Z0-9_]+))*$". You sent "f1".',
            id="feature-without-operator",
        ),
        pytest.param(
            {"project": "IS_NOT:default"},
            "/query/project",
            'The `/query/project` property must match pattern "^(IS|IS_ANY_OF):(.*?)'
            '(,([a-zA-Z0-9_]+))*$". You sent "IS_NOT:default".',
            id="operator-not-offered",
        ),
        pytest.param(
            {"from": "IS:2026-3-1"},
            "/query/from",
            'The `/query/from` property must match pattern "^(IS):\\d{4}-\\d{2}-\\d{2}$". '
            'You sent "IS:2026-3-1".',
            id="from-not-a-day",
        ),
        pytest.param(
            {"from": "IS:2026-02-30"},
            "/query/from",
            'The `/query/from` property must name a day that exists. You sent "IS:2026-02-30".',
            id="from-no-such-day",
        ),
        pytest.param(
            {"id": "IS:99999999999999999999"},
            "/query/id",
            "The `/query/id` property must name event ids (whole numbers). "
            'You sent "IS:99999999999999999999".',
            id="id-past-bigint",
        ),
        pytest.param(
            {"to": "IS_BEFORE:2026-03-01"},
            "/query/to",
            'The `/query/to` property must match pattern "^(IS):\\d{4}-\\d{2}-\\d{2}$". '
            'You sent "IS_BEFORE:2026-03-01".',
            id="to-operator",
        ),
        pytest.param(
            {"createdBy": "IS:ada"},
            "/query/createdBy",
            "The `/query/createdBy` property must name user ids (whole numbers). "
            'You sent "IS:ada".',
            id="created-by-not-an-id",
        ),
        pytest.param(
            {"id": "IS:x"},
            "/query/id",
            'The `/query/id` property must name event ids (whole numbers). You sent "IS:x".',
            id="id-not-a-number",
        ),
        pytest.param(
            {"offset": "-5"},
            "/query/offset",
            'The `/query/offset` property must be a whole number of 0 or more. You sent "-5".',
            id="negative-offset",
        ),
        pytest.param(
            {"limit": "1001"},
            "/query/limit",
            'The `/query/limit` property must be from 1 to 1000. You sent "1001".',
            id="limit-over-1000",
        ),
        pytest.param(
            {"limit": "ten"},
            "/query/limit",
            'The `/query/limit` property must be a whole number. You sent "ten".',
            id="limit-not-a-number",
        ),
        pytest.param(
            {"type": ["IS:a", "IS:b"]},
            "/query/type",
            'The `/query/type` property must be string. You sent ["IS:a", "IS:b"].',
            id="repeated",
        ),
    ],
)
def test_search_events__invalid_query__400_naming_it(admin_client, db, query, path, message):
    """Unleash 8.2 refuses the pattern mismatches alike (as BadDataError); it reads a negative
    offset as 0 and a limit out of range as 50, and an id past its integer column fails in the
    database (500, UnknownError quoting the SQL): each is a 400 here."""
    body = assert_error(admin_client.get(URL, query), 400, "ValidationError")

    assert body["details"] == [{"path": path, "message": message}]


def test_search_events__page__fixed_number_of_queries(
    admin_client, events, django_assert_max_num_queries
):
    AuditEventFactory.create_batch(30)
    admin_client.get(URL)  # the token's first use writes its seenAt

    # the token lookup, on PostgreSQL the search's SET LOCAL, the count, the page
    with django_assert_max_num_queries(4):
        assert len(ids(admin_client.get(URL, {"query": "f", "type": "IS:feature-created"}))) == 2
    with django_assert_max_num_queries(4):
        assert len(ids(admin_client.get(URL))) == 36


def test_search_events__anonymous__401(anon_client, db):
    assert_error(anon_client.get(URL), 401, "AuthenticationRequired")


def test_search_events__client_token__403(client_token_client):
    assert_error(client_token_client.get(URL), 403, "NoAccessError")


def test_search_events__postgresql__text_index_matches_the_query(admin_client, events):
    """The trigram index of the core's migration 0012 is on the very expression `query`
    filters on, so PostgreSQL plans the search with it (docs/search.md)."""
    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's")
    from flagadmin.api.event_search_views import matching_events

    query = matching_events({"query": "blue"}, sees_unscoped=True).order_by().query
    sql, params = query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "audit_text_trgm" in plan
