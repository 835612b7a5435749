"""The Django admin of the core: users, roles, API tokens, audit events, static files."""

from __future__ import annotations

import html as html_module
import re
from datetime import UTC, datetime
from urllib.parse import urlencode

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from flagadmin.core.actors import actor_label, audit_identity
from flagadmin.core.models import AccountType, ApiToken, AuditEvent, Role, TokenType, User
from tests.admin_forms import change_form_data
from tests.factories import AuditEventFactory, FeatureFactory, UserFactory, make_token

ADD_TOKEN = "/admin/flagadmin/apitoken/add/"


@pytest.fixture
def staff(db) -> Client:
    user = UserFactory(username="boss", root_role_id=Role.ADMIN)
    user.set_password("correct horse battery staple")
    user.save()
    client = Client()
    client.force_login(user)
    return client


def test_admin__sign_in_with_username_or_email(db):
    user = UserFactory(username="boss", email="boss@example.com", root_role_id=Role.ADMIN)
    user.set_password("correct horse battery staple")
    user.save()

    for login in ("boss", "BOSS@example.com"):
        client = Client()
        assert client.login(username=login, password="correct horse battery staple")
        assert client.get("/admin/").status_code == 200


def test_admin__editor_is_not_let_in(db):
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.EDITOR))

    response = client.get("/admin/flagadmin/apitoken/")

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


@pytest.mark.parametrize("model", ["user", "role", "apitoken", "auditevent"])
def test_admin__changelists_render(staff, model):
    AuditEventFactory(project="default", feature_name="flag-a")
    make_token(TokenType.CLIENT, projects=["default"])

    assert staff.get(f"/admin/flagadmin/{model}/").status_code == 200


def test_admin__static_files_served_with_debug_off(staff, settings):
    assert settings.DEBUG is False

    response = staff.get("/static/admin/css/base.css")

    assert response.status_code == 200
    assert b"".join(response.streaming_content)


# --- API tokens -------------------------------------------------------------------------------


def test_admin__add_token__secret_shown_once_never_stored(staff):
    response = staff.post(
        ADD_TOKEN,
        {
            "name": "sdk",
            "type": "client",
            "project": "default",
            "environment": "production",
            "user": "",
            "expires_at_0": "",
            "expires_at_1": "",
        },
    )

    # POST-redirect-GET: the secret is on the page the add form redirects to, once.
    token = ApiToken.objects.get(name="sdk")
    assert response.status_code == 302, response.content
    assert response["Location"] == f"/admin/flagadmin/apitoken/{token.pk}/created/"
    response = staff.get(response["Location"])
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    plaintext = response.context["plaintext"]
    assert plaintext.startswith("default:production.")
    assert plaintext in response.content.decode()
    assert token.digest == ApiToken.digest_of(plaintext)
    assert (token.project, token.environment, token.created_by) == (
        "default",
        "production",
        "boss@example.com",
    )
    assert plaintext.split(".")[1] not in str(ApiToken.objects.filter(pk=token.pk).values().get())
    event = AuditEvent.objects.get(type="api-token-created")
    assert (event.created_by, event.data["tokenName"]) == ("boss@example.com", "sdk")
    # Afterwards neither the secret nor the digest appears anywhere in the admin.
    for page in (f"/admin/flagadmin/apitoken/{token.pk}/change/", "/admin/flagadmin/apitoken/"):
        text = staff.get(page).content.decode()
        assert plaintext.split(".")[1] not in text
        assert token.digest not in text


def test_admin__add_token__secret_not_in_clear_in_the_session_store(staff):
    response = staff.post(
        ADD_TOKEN,
        {"name": "ops", "type": "admin", "project": "default", "environment": "production"},
    )

    # Between the POST and the page that shows it, the secret waits in the session, a row of
    # django_session: sealed, never in clear.
    stored = [session.get_decoded() for session in Session.objects.all()]
    plaintext = staff.get(response["Location"]).context["plaintext"]
    secret = plaintext.split(".")[1]
    assert len(stored) == 1
    assert secret not in repr(stored)
    assert ApiToken.objects.get(name="ops").digest == ApiToken.digest_of(plaintext)


def test_admin__add_admin_token__scope_forced_to_everything(staff):
    response = staff.post(
        ADD_TOKEN,
        {"name": "ops", "type": "admin", "project": "default", "environment": "production"},
    )

    assert response.status_code == 302, response.content
    token = ApiToken.objects.get(name="ops")
    assert (token.prefix, token.project, token.environment, token.user) == ("*:*", "*", "*", None)


def test_admin__add_personal_token_needs_a_user(staff):
    response = staff.post(
        ADD_TOKEN, {"name": "pat", "type": "personal", "project": "*", "environment": "*"}
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "user": ["A personal token needs the user it acts as."]
    }
    assert not ApiToken.objects.filter(name="pat").exists()


def test_admin__add_personal_token(staff):
    viewer = UserFactory(root_role_id=Role.VIEWER)

    response = staff.post(
        ADD_TOKEN,
        {"name": "pat", "type": "personal", "project": "*", "environment": "*", "user": viewer.pk},
    )

    assert response.status_code == 302
    assert staff.get(response["Location"]).context["plaintext"].startswith("user:")
    assert ApiToken.objects.get(name="pat").user == viewer


def test_admin__token_created_page__reload_shows_no_secret_and_creates_nothing(staff):
    response = staff.post(
        ADD_TOKEN, {"name": "ops", "type": "admin", "project": "*", "environment": "*"}
    )
    first = staff.get(response["Location"])

    reloaded = staff.get(response["Location"])

    assert first.context["plaintext"].startswith("*:*.")
    assert reloaded.status_code == 200
    assert reloaded.context["plaintext"] is None
    page = reloaded.content.decode()
    assert first.context["plaintext"] not in page
    assert 'id="token-secret-gone"' in page
    assert "no-store" in reloaded["Cache-Control"]
    assert ApiToken.objects.filter(name="ops").count() == 1
    assert AuditEvent.objects.filter(type="api-token-created").count() == 1


def test_admin__add_client_token_unknown_scope_refused(staff):
    response = staff.post(
        ADD_TOKEN, {"name": "sdk", "type": "client", "project": "nope", "environment": "stage"}
    )

    assert response.context["adminform"].form.errors == {
        "project": ["Unknown project(s): nope"],
        "environment": ["Unknown environment."],
    }


CONTROL_CHARACTERS = "Must not contain control characters (\\u0000 to \\u001f, \\u007f)."


@pytest.mark.parametrize("name", ["s\x01dk", "sdk\nprod", "sdk\x7f"])
def test_admin__token_name_with_control_character__refused_as_the_api_refuses_it(staff, name):
    token, _ = make_token(TokenType.ADMIN, name="old")
    change = f"/admin/flagadmin/apitoken/{token.pk}/change/"

    added = staff.post(
        ADD_TOKEN,
        {"name": name, "type": "client", "project": "default", "environment": "production"},
    )
    renamed = staff.post(change, change_form_data(staff.get(change), name=name))

    for response in (added, renamed):
        assert response.status_code == 200
        assert response.context["adminform"].form.errors == {"name": [CONTROL_CHARACTERS]}
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["old"]
    assert not AuditEvent.objects.filter(type__startswith="api-token").exists()


def test_admin__revoke_action(staff):
    token, _ = make_token(TokenType.ADMIN, name="old")

    response = staff.post(
        "/admin/flagadmin/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}
    )

    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert not token.is_usable


def test_admin__token_digest_not_editable(staff):
    token, _ = make_token(TokenType.ADMIN, name="old")
    form = staff.get(f"/admin/flagadmin/apitoken/{token.pk}/change/").context["adminform"].form

    assert "digest" not in form.fields
    assert set(form.fields) == {"name", "expires_at", "revoked_at"}


# --- users and roles --------------------------------------------------------------------------


def _empty_inlines(client: Client, url: str) -> dict[str, int]:
    """Management-form data for whatever inlines other apps add to a page (none filled in)."""
    data = {}
    for inline in client.get(url).context["inline_admin_formsets"]:
        prefix = inline.formset.prefix
        data |= {f"{prefix}-TOTAL_FORMS": 0, f"{prefix}-INITIAL_FORMS": 0}
    return data


def test_admin__add_user_without_password(staff):
    url = "/admin/flagadmin/user/add/"
    response = staff.post(
        url,
        {
            "username": "newbie",
            "email": "newbie@example.com",
            "name": "New Bie",
            "root_role": Role.VIEWER,
            "usable_password": "false",
            **_empty_inlines(staff, url),
        },
    )

    assert response.status_code == 302, response.content.decode()[-6000:]
    user = User.objects.get(username="newbie")
    assert user.root_role_id == Role.VIEWER
    assert not user.has_usable_password()


def test_admin__system_users_read_only(staff):
    assert (
        staff.post(f"/admin/flagadmin/user/{User.ADMIN_TOKEN_USER_ID}/delete/").status_code == 403
    )
    response = staff.get(f"/admin/flagadmin/user/{User.ADMIN_TOKEN_USER_ID}/change/")
    assert response.status_code == 200
    assert not response.context["has_change_permission"]


def test_admin__seeded_roles_cannot_be_deleted(staff):
    assert staff.post(f"/admin/flagadmin/role/{Role.VIEWER}/delete/").status_code == 403
    assert Role.objects.filter(pk=Role.VIEWER).exists()


# --- audit events -----------------------------------------------------------------------------


def test_admin__audit_events_read_only(staff):
    event = AuditEventFactory()

    assert staff.get("/admin/flagadmin/auditevent/add/").status_code == 403
    assert staff.post(f"/admin/flagadmin/auditevent/{event.pk}/delete/").status_code == 403
    response = staff.get(f"/admin/flagadmin/auditevent/{event.pk}/change/")
    assert response.status_code == 200
    assert not response.context["has_change_permission"]


def test_admin__audit_events_filter_and_search(staff):
    AuditEventFactory(type="feature-created", project="default", feature_name="checkout")
    AuditEventFactory(type="feature-archived", project="default", feature_name="search-v2")
    AuditEventFactory(type="feature-created", project="other", feature_name="checkout-b")

    def listed(query: str) -> list[str]:
        response = staff.get(f"/admin/flagadmin/auditevent/?{query}")
        assert response.status_code == 200
        return sorted(e.feature_name for e in response.context["cl"].result_list)

    assert listed("type=feature-created") == ["checkout", "checkout-b"]
    assert listed("project=default") == ["checkout", "search-v2"]
    assert listed("q=checkout") == ["checkout", "checkout-b"]
    assert listed("q=checkout&project=other") == ["checkout-b"]


def test_createsuperuser_makes_an_admin_who_can_sign_in(db, monkeypatch):
    from django.core.management import call_command

    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "correct horse battery staple")
    call_command(
        "createsuperuser", interactive=False, username="root", email="root@example.com", verbosity=0
    )

    user = User.objects.get(username="root")
    assert user.root_role_id == Role.ADMIN
    client = Client()
    assert client.login(username="root", password="correct horse battery staple")
    assert client.get("/admin/flagadmin/apitoken/").status_code == 200


def test_admin__add_role__permissions_one_per_line_and_audited(staff):
    response = staff.post(
        "/admin/flagadmin/role/add/",
        {
            "name": "flag editor",
            "type": "root-custom",
            "description": "",
            "permissions": "CREATE_FEATURE\r\nUPDATE_FEATURE\r\n",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    role = Role.objects.get(name="flag editor")
    assert role.permissions == ["CREATE_FEATURE", "UPDATE_FEATURE"]
    event = AuditEvent.objects.get(type="role-created")
    assert event.data["permissions"] == ["CREATE_FEATURE", "UPDATE_FEATURE"]
    assert event.created_by == "boss@example.com"


# --- the audit log: who changed what (issue 29) -----------------------------------------------

AUDIT = "/admin/flagadmin/auditevent/"


def _at(text: str):
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture
def history(db) -> dict[str, AuditEvent]:
    """A small log: people, a token and the instance acting on flags, a group, a token and a
    project, over four days (UTC)."""
    make = AuditEventFactory
    return {
        "created": make(
            type="feature-created",
            created_by="ann@example.com",
            project="default",
            feature_name="checkout",
            created_at=_at("2026-03-01 10:00:00"),
        ),
        "archived": make(
            type="feature-archived",
            created_by="ci-token",
            created_by_user_id=User.ADMIN_TOKEN_USER_ID,
            project="default",
            feature_name="search-v2",
            created_at=_at("2026-03-01 12:30:15"),
        ),
        "group": make(
            type="group-created",
            created_by="ann@example.com",
            data={"id": 7, "name": "devs", "users": [3]},
            created_at=_at("2026-03-02 09:00:00"),
        ),
        "member": make(
            type="group-user-added",
            created_by="bob",
            data={"groupId": 7, "userId": 4},
            created_at=_at("2026-03-02 09:00:01"),
        ),
        "token": make(
            type="api-token-created",
            created_by="ann@example.com",
            data={"id": 4, "tokenName": "ci", "type": "client"},
            created_at=_at("2026-03-03 00:00:00"),
        ),
        "renamed": make(
            type="api-token-updated",
            created_by="unleash_system_user",
            pre_data={"id": 4, "tokenName": "ci"},
            data={"id": 4, "tokenName": "ci-2"},
            created_at=_at("2026-03-04 23:59:59"),
        ),
        "project": make(
            type="project-created",
            created_by="bob",
            project="mobile",
            data={"id": "mobile", "name": "Mobile"},
            created_at=_at("2026-03-05 08:00:00"),
        ),
    }


def _listed(client: Client, history: dict[str, AuditEvent], query: str) -> list[str]:
    """The events the changelist shows for the query, newest first, by their fixture names."""
    names = {event.pk: name for name, event in history.items()}
    response = client.get(f"{AUDIT}?{query}")
    assert response.status_code == 200
    return [names[event.pk] for event in response.context["cl"].result_list]


NEWEST_FIRST = ["project", "renamed", "token", "member", "group", "archived", "created"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("", NEWEST_FIRST, id="none"),
        pytest.param("actor=ann%40example.com", ["token", "group", "created"], id="actor-person"),
        pytest.param("actor=ci-token", ["archived"], id="actor-token"),
        pytest.param("actor=unleash_system_user", ["renamed"], id="actor-system"),
        pytest.param("actor=ann", [], id="actor-exact-only"),
        pytest.param("type=group-created", ["group"], id="type"),
        pytest.param("project=default", ["archived", "created"], id="target-project"),
        pytest.param("feature_name=checkout", ["created"], id="target-flag"),
        pytest.param("group=devs", ["group"], id="target-group-by-name"),
        pytest.param("group=%237", ["member", "group"], id="target-group-by-id"),
        pytest.param("token=ci", ["renamed", "token"], id="target-token"),
        pytest.param("token=ci-2", ["renamed"], id="target-token-new-name"),
        pytest.param(
            "from=2026-03-02", ["project", "renamed", "token", "member", "group"], id="from-day"
        ),
        pytest.param(
            "from=2026-03-02+09%3A00%3A01",
            ["project", "renamed", "token", "member"],
            id="from-second",
        ),
        pytest.param("to=2026-03-01", ["archived", "created"], id="to-whole-day"),
        pytest.param("to=2026-03-01T12:30", ["archived", "created"], id="to-whole-minute"),
        pytest.param("to=2026-03-01+12%3A30%3A14", ["created"], id="to-second"),
        pytest.param("from=2026-03-02&to=2026-03-02", ["member", "group"], id="one-day"),
        pytest.param("actor=bob&from=2026-03-03", ["project"], id="actor-and-time"),
        pytest.param(
            "actor=ann%40example.com&type=api-token-created", ["token"], id="actor-and-type"
        ),
    ],
)
def test_audit_log__filters(staff, history, query, expected):
    assert _listed(staff, history, query) == expected


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        pytest.param("checkout", ["created"], id="flag"),
        pytest.param("ANN@", ["token", "group", "created"], id="actor-any-case"),
        pytest.param("group-", ["member", "group"], id="type"),
        pytest.param("mobile", ["project"], id="project"),
        pytest.param("nobody", [], id="nothing"),
    ],
)
def test_audit_log__search(staff, history, q, expected):
    assert _listed(staff, history, urlencode({"q": q})) == expected


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", "01/03/2026"])
def test_audit_log__time_not_understood__says_so_and_lists_nothing(staff, history, value):
    response = staff.get(AUDIT, {"from": value}, follow=True)

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []
    assert [str(m) for m in response.context["messages"]] == [
        f"Time from: {value!r} is not a time; write YYYY-MM-DD, YYYY-MM-DD hh:mm or "
        "YYYY-MM-DD hh:mm:ss (UTC)."
    ]


def _cells(html: str, pk: int) -> dict[str, str]:
    """The text of each column of the changelist's row of event `pk`, by its field name."""
    row = re.search(
        rf"<tr>(?:(?!</tr>).)*?/auditevent/{pk}/change/(?:(?!</tr>).)*</tr>", html, re.S
    )
    assert row, f"no row for event {pk}"
    cells = re.findall(r'<t[dh] class="field-(\w+)[^"]*">(.*?)</t[dh]>', row.group(0), re.S)
    return {name: re.sub(r"<[^>]+>", "", text).strip() for name, text in cells}


def test_audit_log__columns__time_to_the_second_actor_and_target(staff, history):
    html = staff.get(AUDIT).content.decode()

    assert _cells(html, history["archived"].pk) == {
        "when": "2026-03-01 12:30:15",
        "type": "feature-archived",
        "actor": "ci-token",
        "target": "flag search-v2",
        "environment": "-",
    }
    assert _cells(html, history["member"].pk)["target"] == "group #7"
    assert _cells(html, history["token"].pk)["target"] == "token ci"
    assert _cells(html, history["renamed"].pk)["target"] == "token ci-2"
    assert _cells(html, history["project"].pk)["target"] == "project mobile"
    # Each actor and target links to the log filtered by it.
    assert f'href="{AUDIT}?actor=ci-token"' in html
    assert f'href="{AUDIT}?feature_name=search-v2"' in html
    assert f'href="{AUDIT}?group=%237"' in html
    assert f'href="{AUDIT}?token=ci-2"' in html
    assert f'href="{AUDIT}?project=mobile"' in html


def test_audit_log__filter_boxes_keep_the_other_filters(staff, history):
    html = staff.get(AUDIT, {"type": "group-created", "actor": "ann@example.com"}).content.decode()

    form = re.search(
        r'<form method="get" class="input-filter" data-parameter="from">.*?</form>', html, re.S
    )
    assert form
    assert '<input type="hidden" name="type" value="group-created">' in form.group(0)
    assert '<input type="hidden" name="actor" value="ann@example.com">' in form.group(0)
    # The actor box suggests the people and tokens there are.
    assert '<option value="boss@example.com">' in html


def test_audit_log__changelist_queries_do_not_grow(staff, history, django_assert_max_num_queries):
    staff.get(AUDIT)  # the session and the user's roles, read once
    with django_assert_max_num_queries(9):
        assert staff.get(AUDIT).status_code == 200
    for i in range(60):
        AuditEventFactory(type="feature-updated", feature_name=f"flag-{i}", project="default")
    with django_assert_max_num_queries(9):
        assert staff.get(AUDIT).status_code == 200
    with django_assert_max_num_queries(9):
        assert (
            staff.get(AUDIT, {"actor": "bob", "token": "ci", "from": "2026-03-01"}).status_code
            == 200
        )


# --- an event's page: the data beside the pre-data, key by key ------------------------------------


@pytest.mark.parametrize(
    ("pre_data", "data", "expected"),
    [
        pytest.param(
            {"name": "a", "stale": False},
            {"name": "a", "stale": True},
            [("name", "unchanged", '"a"', '"a"'), ("stale", "changed", "false", "true")],
            id="changed",
        ),
        pytest.param(
            None,
            {"id": 1, "name": "devs"},
            [("id", "added", None, "1"), ("name", "added", None, '"devs"')],
            id="created",
        ),
        pytest.param(
            {"id": 1, "name": "devs"},
            None,
            [("id", "removed", "1", None), ("name", "removed", '"devs"', None)],
            id="deleted",
        ),
        pytest.param(
            {"a": 1, "old": "x"},
            {"a": 1, "new": None},
            [
                ("a", "unchanged", "1", "1"),
                ("new", "added", None, "null"),
                ("old", "removed", '"x"', None),
            ],
            id="key-added-and-removed",
        ),
        pytest.param(
            {"parameters": {"rollout": "50", "groupId": "f"}, "constraints": [{"values": ["NO"]}]},
            {
                "parameters": {"rollout": "75", "groupId": "f"},
                "constraints": [{"values": ["NO", "SE"]}],
            },
            [
                ("constraints[0].values", "changed", '["NO"]', '["NO", "SE"]'),
                ("parameters.groupId", "unchanged", '"f"', '"f"'),
                ("parameters.rollout", "changed", '"50"', '"75"'),
            ],
            id="nested",
        ),
        pytest.param(
            {"variants": [{"name": "a"}]},
            {"variants": [{"name": "a"}, {"name": "b"}]},
            [
                ("variants[0].name", "unchanged", '"a"', '"a"'),
                ("variants[1].name", "added", None, '"b"'),
            ],
            id="list-item-added",
        ),
        pytest.param(
            {"value": {"x": 1}},
            {"value": "x"},
            [("value", "changed", '{"x": 1}', '"x"')],
            id="type-changed",
        ),
        pytest.param(None, None, [], id="no-data"),
    ],
)
def test_audit_event_page__before_after(staff, pre_data, data, expected):
    event = AuditEventFactory(type="feature-strategy-update", pre_data=pre_data, data=data)

    html = staff.get(f"{AUDIT}{event.pk}/change/").content.decode()

    rows = re.findall(
        r'<tr class="(\w+)" data-path="([^"]*)">\s*<td class="path">[^<]*</td>\s*'
        r'<td class="status">\w+</td>\s*<td class="value before">(.*?)</td>\s*'
        r'<td class="value after">(.*?)</td>',
        html,
        re.S,
    )

    def shown(text: str) -> str | None:
        return None if text == "<em>(absent)</em>" else html_module.unescape(text)

    assert [(path, status, shown(b), shown(a)) for status, path, b, a in rows] == expected
    changed = sum(1 for row in expected if row[1] != "unchanged")
    summary = (
        f"{changed} key{'s' if changed != 1 else ''} changed of {len(expected)}."
        if expected
        else "No data recorded."
    )
    assert f'<p class="audit-diff-summary">{summary}</p>' in html


def test_audit_event_page__stale_change_as_unleash_names_it(staff):
    feature = FeatureFactory(name="checkout")
    url = f"/admin/features/feature/{feature.name}/change/"
    response = staff.post(url, change_form_data(staff.get(url), stale="on"))
    assert response.status_code == 302, response.content.decode()[-3000:]
    event = AuditEvent.objects.get(type="feature-stale-on")

    html = staff.get(AUDIT, {"type": "feature-stale-on"}).content.decode()
    assert _cells(html, event.pk) == {
        "when": event.created_at.strftime("%Y-%m-%d %H:%M:%S"),
        "type": "feature-stale-on",
        "actor": "boss@example.com",
        "target": "flag checkout",
        "environment": "-",
    }
    page = staff.get(f"{AUDIT}{event.pk}/change/").content.decode()
    assert '<p class="audit-diff-summary">No data recorded.</p>' in page


# --- one label per actor ------------------------------------------------------------------------


def test_actor_label__token_action__token_name_in_list_and_event_page(staff):
    _, secret = make_token(TokenType.ADMIN, name="deploy-bot")
    api = Client(HTTP_AUTHORIZATION=secret)
    response = api.post(
        "/api/admin/projects/default/features",
        '{"name": "by-token"}',
        content_type="application/json",
    )
    assert response.status_code == 201
    event = AuditEvent.objects.get(type="feature-created", feature_name="by-token")

    assert _cells(staff.get(AUDIT).content.decode(), event.pk)["actor"] == "deploy-bot"
    page = staff.get(f"{AUDIT}{event.pk}/change/").content.decode()
    assert re.search(
        r'<div class="readonly"><a href="[^"]*\?actor=deploy-bot">deploy-bot</a></div>', page
    )
    # The API's createdBy stays what Unleash writes: the token's name.
    events = staff_api_events(secret, "by-token")
    assert [e["createdBy"] for e in events] == ["deploy-bot"]


def staff_api_events(secret: str, flag: str) -> list[dict]:
    response = Client(HTTP_AUTHORIZATION=secret).get(f"/api/admin/events/{flag}")
    assert response.status_code == 200
    return response.json()["events"]


def test_actor_label__person__email_in_list_history_and_token_page(staff):
    person = UserFactory(
        username="ann", email="ann@example.com", name="Ann Long-Name", root_role_id=Role.ADMIN
    )
    ann = Client()
    ann.force_login(person)
    role_url = "/admin/flagadmin/role/add/"
    assert (
        ann.post(
            role_url, {"name": "r1", "type": "root-custom", "description": "", "permissions": ""}
        ).status_code
        == 302
    )
    role = Role.objects.get(name="r1")
    event = AuditEvent.objects.get(type="role-created")
    token, _ = make_token(TokenType.PERSONAL, user=person, name="ann-pat")

    assert _cells(staff.get(AUDIT).content.decode(), event.pk)["actor"] == "ann@example.com"
    history_page = staff.get(f"/admin/flagadmin/role/{role.pk}/history/").content.decode()
    assert re.findall(r'<td class="actor">([^<]*)</td>', history_page) == ["ann@example.com"]
    token_list = staff.get("/admin/flagadmin/apitoken/").content.decode()
    assert re.search(r'<td class="field-acts_as">ann@example.com</td>', token_list)
    token_page = staff.get(f"/admin/flagadmin/apitoken/{token.pk}/change/").content.decode()
    assert '<div class="readonly">ann@example.com</div>' in token_page


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        pytest.param(lambda: None, "unleash_system_user", id="instance"),
        pytest.param(
            lambda: User.objects.get(pk=User.SYSTEM_USER_ID),
            "unleash_system_user",
            id="system-user",
        ),
        pytest.param(
            lambda: User.objects.get(pk=User.ADMIN_TOKEN_USER_ID),
            "admin token",
            id="admin-token-user",
        ),
        pytest.param(lambda: UserFactory(username="u1", email=None), "u1", id="username-only"),
        pytest.param(
            lambda: UserFactory(username="u2", email="u2@example.com", name="U Two"),
            "u2@example.com",
            id="email",
        ),
    ],
)
def test_actor_label__rule(db, who, expected):
    assert actor_label(who()) == expected


def test_actor_label__as_recorded_by_audit_identity(db):
    person = UserFactory(username="p", email="p@example.com")
    token, _ = make_token(TokenType.ADMIN, name="ops-token")
    personal, _ = make_token(TokenType.PERSONAL, user=person, name="p-pat")

    assert actor_label(person) == audit_identity(person).name
    assert actor_label(None, token) == "ops-token"
    assert actor_label(person, personal) == "p@example.com"


# --- system users and service accounts: read-only, listed when asked for ------------------------

USERS = "/admin/flagadmin/user/"


@pytest.fixture
def accounts(db) -> dict[str, User]:
    return {
        "person": UserFactory(username="person"),
        "service": UserFactory(username="svc-deployer", account_type=AccountType.SERVICE),
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("", ["boss", "person"], id="people-by-default"),
        pytest.param("account_type=Service+Account", ["svc-deployer"], id="service-accounts"),
        pytest.param(
            "account_type=System", ["unleash_system_user", "admin-token"], id="system-users"
        ),
        pytest.param(
            "account_type=all",
            ["unleash_system_user", "admin-token", "boss", "person", "svc-deployer"],
            id="all",
        ),
    ],
)
def test_users_admin__system_and_service_accounts_listed_when_asked(
    staff, accounts, query, expected
):
    response = staff.get(f"{USERS}?{query}")

    assert response.status_code == 200
    assert [u.username for u in response.context["cl"].result_list] == expected


@pytest.mark.parametrize(
    "account",
    [
        pytest.param(
            lambda a: User.objects.get(pk=User.ADMIN_TOKEN_USER_ID), id="admin-token-user"
        ),
        pytest.param(lambda a: User.objects.get(pk=User.SYSTEM_USER_ID), id="system-user"),
        pytest.param(lambda a: a["service"], id="service-account"),
    ],
)
def test_users_admin__system_and_service_accounts_read_only(staff, accounts, account):
    user = account(accounts)

    page = staff.get(f"{USERS}{user.pk}/change/")
    assert page.status_code == 200
    assert not page.context["has_change_permission"]
    assert not page.context["has_delete_permission"]
    html = page.content.decode()
    assert 'name="username"' not in html
    assert "field-password" not in html  # no password row, nor its hash shown
    assert f"{user.pk}/password/" not in html
    assert staff.get(f"{USERS}{user.pk}/password/").status_code == 403
    assert (
        staff.post(
            f"{USERS}{user.pk}/password/", {"password1": "x" * 20, "password2": "x" * 20}
        ).status_code
        == 403
    )
    assert staff.post(f"{USERS}{user.pk}/delete/", {"post": "yes"}).status_code == 403
    saved = staff.post(f"{USERS}{user.pk}/change/", {"username": "hijacked", "is_active": ""})
    assert saved.status_code == 403
    assert User.objects.filter(pk=user.pk, username=user.username).exists()


def test_users_admin__person_still_editable(staff, accounts):
    page = staff.get(f"{USERS}{accounts['person'].pk}/change/")

    assert page.context["has_change_permission"]
    assert page.context["has_delete_permission"]
    assert staff.get(f"{USERS}{accounts['person'].pk}/password/").status_code == 200
