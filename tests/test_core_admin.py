"""The Django admin of the core: users, roles, API tokens, audit events, static files."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from flagadmin.core.models import ApiToken, AuditEvent, Role, TokenType, User
from tests.factories import AuditEventFactory, UserFactory, make_token

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
