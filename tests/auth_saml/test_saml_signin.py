"""SAML 2.0 sign-in end to end, with no external identity provider: pysaml2's IdP class signs
real responses with a throwaway key, and Django's test client carries them through
/auth/saml/login -> the IdP -> /auth/saml/callback, as a browser would."""

from __future__ import annotations

import json
import re
from unittest import mock
from urllib.parse import parse_qs, urlparse

import pytest
from axes.models import AccessAttempt
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client

from auth_saml import rate_limit
from auth_saml.config import build_sp_config
from auth_saml.models import ConsumedAssertion, SamlSettings
from auth_saml.services import read_idp_groups
from flagadmin.core.models import AuditEvent, Role, User
from groups.models import GroupMembership
from tests.conftest import assert_error
from tests.factories import GroupFactory, GroupMembershipFactory, SamlSettingsFactory, UserFactory
from tests.saml_idp import (
    IDP_ENTITY_ID,
    IDP_SLO_URL,
    IDP_SSO_URL,
    KeyPair,
    TestIdP,
    make_key_pair,
    require_xmlsec1,
)

PUBLIC_BASE_URL = "https://flags.example.com"
ACS_URL = f"{PUBLIC_BASE_URL}/auth/saml/callback"


@pytest.fixture(scope="session")
def idp_keys() -> KeyPair:
    require_xmlsec1()
    return make_key_pair("test-idp")


@pytest.fixture(scope="session")
def other_keys() -> KeyPair:
    return make_key_pair("someone-else")


@pytest.fixture(autouse=True)
def fresh_rate_limit():
    """Each test's responses counted from zero (the limit is kept per process)."""
    rate_limit.forget_all()
    yield
    rate_limit.forget_all()


@pytest.fixture(autouse=True)
def public_base_url(settings):
    settings.PUBLIC_BASE_URL = PUBLIC_BASE_URL
    settings.SAML_ALLOWED_HOSTS = ["flags.example.com"]


@pytest.fixture
def saml_settings(db, idp_keys) -> SamlSettings:
    return SamlSettingsFactory(certificate=idp_keys.cert_body)


def new_browser() -> Client:
    """A client that checks CSRF as Django does for browsers (the test client skips it)."""
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def browser() -> Client:
    return new_browser()


def make_idp(client: Client, tmp_path, keys: KeyPair) -> TestIdP:
    metadata = client.get("/auth/saml/metadata")
    assert metadata.status_code == 200
    return TestIdP(tmp_path / keys.cert_body[-8:].replace("/", "_"), keys, metadata.text)


@pytest.fixture
def idp(saml_settings, tmp_path, idp_keys) -> TestIdP:
    return make_idp(new_browser(), tmp_path, idp_keys)


@pytest.fixture
def rogue_idp(saml_settings, tmp_path, other_keys) -> TestIdP:
    """Same entity id, but signs with a key whose certificate is not the configured one."""
    return make_idp(new_browser(), tmp_path, other_keys)


def start_sign_in(client: Client, idp: TestIdP, next_url: str | None = None):
    response = client.get("/auth/saml/login", {"next": next_url} if next_url else {})
    assert response.status_code == 302, response.content
    return idp.read_authn_request(response["Location"])


def sign_in(
    client: Client,
    idp: TestIdP,
    email: str,
    attributes: dict[str, list[str]] | None = None,
    next_url: str | None = None,
    **response_kwargs,
):
    request, relay_state = start_sign_in(client, idp, next_url)
    saml_response = idp.response(request, email, attributes, **response_kwargs)
    return client.post(
        "/auth/saml/callback", {"SAMLResponse": saml_response, "RelayState": relay_state}
    )


def signed_in_user_id(client: Client) -> int | None:
    value = client.session.get("_auth_user_id")
    return int(value) if value is not None else None


def assert_refused(response, *fragments: str) -> str:
    assert response.status_code == 403, response.content
    assert response["Content-Type"].startswith("text/html")
    text = re.sub(r"\s+", " ", response.content.decode())
    assert "Sign-in refused" in text
    for fragment in fragments:
        assert fragment in text
    return text


# --- service provider metadata and sign-in start --------------------------------------------


def test_metadata__entity_id_and_acs_from_public_base_url_not_host(saml_settings, browser):
    response = browser.get("/auth/saml/metadata", HTTP_HOST="localhost")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/xml")
    xml = response.content.decode()
    assert f'entityID="{PUBLIC_BASE_URL}"' in xml
    assert f'Location="{ACS_URL}"' in xml
    assert f'Location="{PUBLIC_BASE_URL}/auth/saml/logout/done"' in xml
    assert "localhost" not in xml
    assert "testserver" not in xml


def test_metadata__advertises_only_accepted_algorithms(saml_settings, browser):
    xml = browser.get("/auth/saml/metadata").content.decode()

    assert 'Algorithm="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"' in xml
    assert 'Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"' in xml
    assert "md5" not in xml
    assert "sha1" not in xml


def test_login__redirects_to_idp_with_authn_request(idp, browser):
    response = browser.get("/auth/saml/login", {"next": "/after"})

    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(IDP_SSO_URL + "?")
    request, relay_state = idp.read_authn_request(location)
    assert relay_state == "/after"
    assert request.issuer.text == PUBLIC_BASE_URL
    assert request.assertion_consumer_service_url == ACS_URL
    assert request.destination == IDP_SSO_URL
    assert request.name_id_policy.format == (
        "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
    )


def test_login__foreign_next__falls_back_to_default(idp, browser):
    response = browser.get("/auth/saml/login", {"next": "https://evil.example/"})

    _, relay_state = idp.read_authn_request(response["Location"])
    assert relay_state == "/docs/"


def test_sp_config__security_options(saml_settings):
    config = build_sp_config(saml_settings)

    assert config.entityid == PUBLIC_BASE_URL
    assert config.accepted_time_diff == 60
    assert config.getattr("allow_unsolicited", "sp") is False
    assert config.getattr("want_assertions_or_response_signed", "sp") is True
    assert config.getattr("signing_algorithm", "sp").endswith("rsa-sha256")
    assert config.getattr("digest_algorithm", "sp").endswith("sha256")


# --- known users ----------------------------------------------------------------------------


def test_sign_in__known_user_case_insensitive__signed_in(idp, browser):
    user = UserFactory(email="alice@example.com", login_attempts=3, seen_at=None)

    response = sign_in(browser, idp, "Alice@Example.COM", next_url="/after")

    assert response.status_code == 302, response.content
    assert response["Location"] == "/after"
    assert signed_in_user_id(browser) == user.pk
    user.refresh_from_db()
    assert user.login_attempts == 0
    assert user.seen_at is not None
    assert User.objects.filter(email__iexact="alice@example.com").count() == 1


@pytest.mark.parametrize(
    ("sign_response", "sign_assertion"),
    [
        pytest.param(False, True, id="assertion-signed"),
        pytest.param(True, False, id="response-signed"),
        pytest.param(True, True, id="both-signed"),
    ],
)
def test_sign_in__either_signature__accepted(idp, browser, sign_response, sign_assertion):
    user = UserFactory(email="bob@example.com")

    response = sign_in(
        browser, idp, "bob@example.com", sign_response=sign_response, sign_assertion=sign_assertion
    )

    assert response.status_code == 302, response.content
    assert signed_in_user_id(browser) == user.pk


def test_sign_in__admin_without_next__lands_on_django_admin(idp, browser):
    UserFactory(email="root@example.com", root_role_id=Role.ADMIN)

    response = sign_in(browser, idp, "root@example.com")

    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    assert browser.get("/admin/").status_code == 200


def test_sign_in__editor_without_next__lands_on_docs_not_admin(idp, browser):
    UserFactory(email="ed@example.com", root_role_id=Role.EDITOR)

    response = sign_in(browser, idp, "ed@example.com")

    assert response.status_code == 302
    assert response["Location"] == "/docs/"
    admin = browser.get("/admin/")
    assert admin.status_code == 302
    assert admin["Location"].startswith("/admin/login/")


def test_sign_in__session_calls_the_api(idp, browser):
    UserFactory(email="root@example.com", root_role_id=Role.ADMIN)
    sign_in(browser, idp, "root@example.com")

    settings_response = browser.get("/api/admin/auth/saml/settings")
    projects_response = browser.get("/api/admin/projects")

    assert settings_response.status_code == 200
    assert settings_response.json()["entityId"] == IDP_ENTITY_ID
    assert projects_response.status_code not in (401, 403)


def test_sign_in__editor_session__api_answers_403_not_401(idp, browser):
    UserFactory(email="ed@example.com", root_role_id=Role.EDITOR)
    sign_in(browser, idp, "ed@example.com")

    response = browser.get("/api/admin/auth/saml/settings")

    assert_error(response, 403, "NoAccessError")


def test_sign_in__session_writes_need_the_csrf_token(idp, browser):
    UserFactory(email="root@example.com", root_role_id=Role.ADMIN)
    sign_in(browser, idp, "root@example.com")
    body = json.dumps(
        {
            "enabled": True,
            "entityId": "https://idp.example/new",
            "signOnUrl": "s",
            "certificate": "c",
        }
    )
    url = "/api/admin/auth/saml/settings"

    without_token = browser.post(url, data=body, content_type="application/json")
    with_token = browser.post(
        url,
        data=body,
        content_type="application/json",
        HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value,  # set by sign-in
    )

    assert without_token.status_code == 403
    assert with_token.status_code == 200, with_token.content
    assert AuditEvent.objects.get(type="setting-updated").created_by == "root@example.com"


def test_api__no_session_no_token__still_401(saml_settings, browser):
    assert_error(browser.get("/api/admin/auth/saml/settings"), 401, "AuthenticationRequired")


def test_sign_in__inactive_user__refused_and_counted(idp, browser):
    user = UserFactory(email="gone@example.com", is_active=False, login_attempts=1)

    response = sign_in(browser, idp, "gone@example.com")

    assert_refused(response, "gone@example.com is disabled")
    assert signed_in_user_id(browser) is None
    user.refresh_from_db()
    assert user.login_attempts == 2


def test_sign_in__existing_user_outside_email_domains__signed_in(idp, browser):
    SamlSettings.objects.update(auto_create=True, email_domains="example.com")
    user = UserFactory(email="carol@partner.org")

    response = sign_in(browser, idp, "carol@partner.org")

    assert response.status_code == 302
    assert signed_in_user_id(browser) == user.pk


# --- unknown users ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role_settings", "expected_role"),
    [
        pytest.param({}, Role.EDITOR, id="default-editor"),
        pytest.param({"default_root_role": "Viewer"}, Role.VIEWER, id="by-name"),
        pytest.param({"default_root_role_id": 3}, Role.VIEWER, id="by-id"),
        pytest.param(
            {"default_root_role": "Viewer", "default_root_role_id": 1}, Role.ADMIN, id="id-wins"
        ),
    ],
)
def test_sign_in__unknown_user_allowed__created_with_root_role(
    idp, browser, role_settings, expected_role
):
    SamlSettings.objects.update(
        auto_create=True, email_domains=" @Example.COM , other.org", **role_settings
    )

    response = sign_in(
        browser, idp, "New.Person@example.com", {"firstName": ["New"], "lastName": ["Person"]}
    )

    assert response.status_code == 302, response.content
    user = User.objects.get(email="new.person@example.com")
    assert signed_in_user_id(browser) == user.pk
    assert user.root_role_id == expected_role
    assert user.name == "New Person"
    assert user.seen_at is not None
    assert not user.has_usable_password()
    event = AuditEvent.objects.get(type="user-created")
    assert event.data == {
        "id": user.pk,
        "email": "new.person@example.com",
        "username": None,  # the one shape of user-created, whoever creates the user
        "name": "New Person",
        "rootRole": expected_role,
        "source": "saml",
    }


@pytest.mark.parametrize(
    ("saml_fields", "email", "reason"),
    [
        pytest.param(
            {"auto_create": False, "email_domains": "example.com"},
            "new@example.com",
            "accounts are not created automatically",
            id="auto-create-off",
        ),
        pytest.param(
            {"auto_create": None, "email_domains": "example.com"},
            "new@example.com",
            "accounts are not created automatically",
            id="auto-create-not-sent",
        ),
        pytest.param(
            {"auto_create": True, "email_domains": "example.org, other.com"},
            "new@example.com",
            "its domain is not one of the allowed email domains",
            id="domain-not-listed",
        ),
        pytest.param(
            {"auto_create": True, "email_domains": "example.com"},
            "new@sub.example.com",
            "its domain is not one of the allowed email domains",
            id="subdomain-not-listed",
        ),
        pytest.param(
            {"auto_create": True, "email_domains": None},
            "new@example.com",
            "its domain is not one of the allowed email domains",
            id="no-domains",
        ),
    ],
)
def test_sign_in__unknown_user_not_allowed__refused_nobody_created(
    idp, browser, saml_fields, email, reason
):
    SamlSettings.objects.update(**saml_fields)
    users_before = User.objects.count()

    response = sign_in(browser, idp, email)

    assert_refused(response, reason)
    assert User.objects.count() == users_before
    assert signed_in_user_id(browser) is None


def test_sign_in__name_id_not_an_email__refused(idp, browser):
    SamlSettings.objects.update(auto_create=True, email_domains="example.com")

    response = sign_in(browser, idp, "not-an-email")

    assert_refused(response, "did not send an email address")


# --- responses that must be refused ---------------------------------------------------------


def test_sign_in__unsigned_response__refused_not_counted_against_the_named_user(idp, browser):
    user = UserFactory(email="alice@example.com", login_attempts=0)

    response = sign_in(browser, idp, "alice@example.com", sign_response=False, sign_assertion=False)

    assert_refused(response, "not signed")
    assert signed_in_user_id(browser) is None
    user.refresh_from_db()
    assert user.login_attempts == 0  # anyone can name anyone in an unverified response


def test_sign_in__signed_by_other_key__refused_not_counted_against_the_named_user(
    saml_settings, rogue_idp, browser
):
    user = UserFactory(email="alice@example.com", login_attempts=2)

    response = sign_in(browser, rogue_idp, "alice@example.com", sign_response=True)

    assert_refused(response, "not signed with the identity provider")
    assert signed_in_user_id(browser) is None
    user.refresh_from_db()
    assert user.login_attempts == 2


def test_sign_in__sha1_signature__refused_not_counted_against_the_named_user(idp, browser):
    user = UserFactory(email="alice@example.com", login_attempts=0)

    response = sign_in(
        browser,
        idp,
        "alice@example.com",
        sign_response=True,
        sign_alg="http://www.w3.org/2000/09/xmldsig#rsa-sha1",
        digest_alg="http://www.w3.org/2000/09/xmldsig#sha1",
    )

    assert_refused(response, "an algorithm this instance does not accept", "rsa-sha1")
    assert signed_in_user_id(browser) is None
    user.refresh_from_db()
    assert user.login_attempts == 0


def test_sign_in__wrong_in_response_to__refused(idp, browser):
    UserFactory(email="alice@example.com")

    response = sign_in(browser, idp, "alice@example.com", in_response_to="id-not-ours")

    assert_refused(response, "does not answer a sign-in started from this browser")
    assert signed_in_user_id(browser) is None


def test_sign_in__idp_initiated__refused(idp, browser):
    UserFactory(email="alice@example.com")
    request, _ = start_sign_in(new_browser(), idp)  # another browser started it
    saml_response = idp.response(request, "alice@example.com")

    response = browser.post("/auth/saml/callback", {"SAMLResponse": saml_response})

    assert_refused(response, "does not answer a sign-in started from this browser")
    assert signed_in_user_id(browser) is None


def test_sign_in__replayed_in_same_session__refused(idp, browser):
    UserFactory(email="alice@example.com")
    request, _ = start_sign_in(browser, idp)
    saml_response = idp.response(request, "alice@example.com")
    first = browser.post("/auth/saml/callback", {"SAMLResponse": saml_response})
    assert first.status_code == 302
    attacker = new_browser()

    second = browser.post("/auth/saml/callback", {"SAMLResponse": saml_response})
    third = attacker.post("/auth/saml/callback", {"SAMLResponse": saml_response})

    assert_refused(second, "already been used")
    assert_refused(third)
    assert signed_in_user_id(attacker) is None


def test_sign_in__replay_with_outstanding_request_restored__refused_by_assertion_store(
    idp, browser
):
    UserFactory(email="alice@example.com")
    request, relay_state = start_sign_in(browser, idp)
    saml_response = idp.response(request, "alice@example.com")
    assert browser.post("/auth/saml/callback", {"SAMLResponse": saml_response}).status_code == 302
    assert ConsumedAssertion.objects.count() == 1
    # Put the answered request back, as if the session store had been copied before sign-in.
    saml_session = SessionStore(browser.cookies["saml_session"].value)
    saml_session["_saml2_outstanding_queries"] = {request.id: relay_state}
    saml_session.save()
    browser.logout()

    response = browser.post("/auth/saml/callback", {"SAMLResponse": saml_response})

    assert_refused(response, "already been used")


def test_sign_in__missing_saml_response__400_page(idp, browser):
    response = browser.post("/auth/saml/callback", {})

    assert response.status_code == 400
    assert "carries no SAML response" in response.content.decode()


def test_sign_in__idp_clock_30s_ahead__accepted(idp, browser, monkeypatch):
    import saml2.time_util

    UserFactory(email="alice@example.com")
    request, relay_state = start_sign_in(browser, idp)
    saml_response = idp.response(request, "alice@example.com")
    real_now = saml2.time_util.utc_now
    monkeypatch.setattr(saml2.time_util, "utc_now", lambda: real_now() - 30)

    response = browser.post(
        "/auth/saml/callback", {"SAMLResponse": saml_response, "RelayState": relay_state}
    )

    assert response.status_code == 302


def test_sign_in__idp_clock_90s_ahead__refused(idp, browser, monkeypatch):
    import saml2.time_util

    UserFactory(email="alice@example.com")
    request, relay_state = start_sign_in(browser, idp)
    saml_response = idp.response(request, "alice@example.com")
    real_now = saml2.time_util.utc_now
    monkeypatch.setattr(saml2.time_util, "utc_now", lambda: real_now() - 90)

    response = browser.post(
        "/auth/saml/callback", {"SAMLResponse": saml_response, "RelayState": relay_state}
    )

    assert_refused(response, "not valid at this time")


# --- group syncing ----------------------------------------------------------------------------


@pytest.fixture
def synced(saml_settings):
    SamlSettings.objects.update(enable_group_syncing=True, group_json_path="groups")


def memberships(user: User) -> dict[str, tuple[bool, str]]:
    return {
        m.group.name: (m.added_by_sso, m.created_by)
        for m in GroupMembership.objects.filter(user=user).select_related("group")
    }


def test_group_sync__adds_and_removes_only_sign_in_memberships(synced, idp, browser):
    user = UserFactory(email="alice@example.com")
    dev = GroupFactory(name="dev", mappings_sso=["idp-dev", "idp-eng"])
    ops = GroupFactory(name="ops", mappings_sso=["idp-ops"])
    manual_dev = GroupFactory(name="manual-dev", mappings_sso=["idp-dev"])
    manual_other = GroupFactory(name="manual-other", mappings_sso=["idp-nothing"])
    unmapped = GroupFactory(name="unmapped")
    for group in (manual_dev, manual_other, unmapped):
        GroupMembershipFactory(group=group, user=user, created_by="admin@example.com")

    first = sign_in(browser, idp, "alice@example.com", {"groups": ["idp-dev", "unknown"]})

    assert first.status_code == 302
    assert memberships(user) == {
        "dev": (True, "saml"),
        "manual-dev": (False, "admin@example.com"),
        "manual-other": (False, "admin@example.com"),
        "unmapped": (False, "admin@example.com"),
    }
    added = AuditEvent.objects.filter(type="group-user-added")
    assert [e.data for e in added] == [{"groupId": dev.pk, "userId": user.pk}]
    assert added[0].created_by == "unleash_system_user"

    second = sign_in(new_browser(), idp, "alice@example.com", {"groups": ["idp-ops"]})

    assert second.status_code == 302
    assert memberships(user) == {
        "ops": (True, "saml"),
        "manual-dev": (False, "admin@example.com"),
        "manual-other": (False, "admin@example.com"),
        "unmapped": (False, "admin@example.com"),
    }
    removed = AuditEvent.objects.get(type="group-user-removed")
    assert removed.pre_data == {"groupId": dev.pk, "userId": user.pk}
    assert AuditEvent.objects.filter(type="group-user-added").count() == 2
    assert AuditEvent.objects.filter(type="group-user-added").first().data == {
        "groupId": ops.pk,
        "userId": user.pk,
    }


def test_group_sync__empty_group_list__leaves_sign_in_groups_only(synced, idp, browser):
    user = UserFactory(email="alice@example.com")
    dev = GroupFactory(name="dev", mappings_sso=["idp-dev"])
    GroupMembershipFactory(group=dev, user=user, added_by_sso=True, created_by="saml")
    manual = GroupFactory(name="manual", mappings_sso=["idp-dev"])
    GroupMembershipFactory(group=manual, user=user)

    sign_in(browser, idp, "alice@example.com", {"groups": []})

    assert set(memberships(user)) == {"manual"}


def test_group_sync__attribute_absent__memberships_unchanged(synced, idp, browser):
    user = UserFactory(email="alice@example.com")
    dev = GroupFactory(name="dev", mappings_sso=["idp-dev"])
    GroupMembershipFactory(group=dev, user=user, added_by_sso=True, created_by="saml")

    response = sign_in(browser, idp, "alice@example.com", {"other": ["x"]})

    assert response.status_code == 302
    assert set(memberships(user)) == {"dev"}
    assert not AuditEvent.objects.filter(type__startswith="group-user").exists()


def test_group_sync__disabled__memberships_unchanged(saml_settings, idp, browser):
    SamlSettings.objects.update(enable_group_syncing=False, group_json_path="groups")
    user = UserFactory(email="alice@example.com")
    GroupFactory(name="dev", mappings_sso=["idp-dev"])

    sign_in(browser, idp, "alice@example.com", {"groups": ["idp-dev"]})

    assert memberships(user) == {}


def test_group_sync__claim_uri_attribute_name__matched_exactly(synced, idp, browser):
    claim = "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups"
    SamlSettings.objects.update(group_json_path=claim)
    user = UserFactory(email="alice@example.com")
    GroupFactory(name="dev", mappings_sso=["0b5c6f1e-group-object-id"])

    sign_in(browser, idp, "alice@example.com", {claim: ["0b5c6f1e-group-object-id"]})

    assert set(memberships(user)) == {"dev"}


def test_group_sync__new_user__joins_groups(synced, idp, browser):
    SamlSettings.objects.update(auto_create=True, email_domains="example.com")
    GroupFactory(name="dev", mappings_sso=["idp-dev"])

    sign_in(browser, idp, "new@example.com", {"groups": ["idp-dev"]})

    assert memberships(User.objects.get(email="new@example.com")) == {"dev": (True, "saml")}


@pytest.mark.parametrize(
    ("attributes", "path", "expected"),
    [
        pytest.param({"groups": ["a", "b"]}, "groups", ["a", "b"], id="exact"),
        pytest.param({"groups": "a"}, "groups", ["a"], id="single-string"),
        pytest.param({"a.b": ["x"], "a": ['{"b": ["y"]}']}, "a.b", ["x"], id="exact-wins"),
        pytest.param(
            {"profile": ['{"groups": ["y", "z"]}']}, "profile.groups", ["y", "z"], id="walk"
        ),
        pytest.param(
            {"profile": ['{"org": {"groups": "y"}}']}, "profile.org.groups", ["y"], id="deep-walk"
        ),
        pytest.param({"groups": ['["a", "b"]']}, "groups", ["a", "b"], id="json-array-value"),
        pytest.param({"groups": ["a"]}, "teams", None, id="absent"),
        pytest.param({"profile": ['{"teams": []}']}, "profile.groups", None, id="walk-absent"),
        pytest.param({"groups": ["a"]}, "", None, id="no-path"),
    ],
)
def test_read_idp_groups(attributes, path, expected):
    assert read_idp_groups(attributes, path) == expected


# --- sign-out ---------------------------------------------------------------------------------


def test_logout__without_sign_out_url__local_logout(idp, browser):
    UserFactory(email="alice@example.com")
    sign_in(browser, idp, "alice@example.com")

    response = browser.get("/auth/saml/logout")

    assert response.status_code == 302
    assert response["Location"] == "/docs/"
    assert signed_in_user_id(browser) is None


def test_logout__anonymous__redirected(saml_settings, browser):
    response = browser.get("/auth/saml/logout")

    assert response.status_code == 302
    assert response["Location"] == "/docs/"


def test_logout__with_sign_out_url_and_sp_key__signed_request_to_idp(idp, browser, other_keys):
    settings_row = SamlSettings.objects.get()
    settings_row.sign_out_url = IDP_SLO_URL
    settings_row.sp_private_key = other_keys.key_pem
    settings_row.save()
    UserFactory(email="alice@example.com")
    sign_in(browser, idp, "alice@example.com")

    response = browser.get("/auth/saml/logout")

    assert response.status_code == 302
    location = urlparse(response["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == IDP_SLO_URL
    query = parse_qs(location.query)
    assert "SAMLRequest" in query
    assert "Signature" in query
    assert query["SigAlg"] == ["http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"]
    assert signed_in_user_id(browser) is None


# --- disabled --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/auth/saml/login"),
        ("post", "/auth/saml/callback"),
        ("get", "/auth/saml/metadata"),
        ("get", "/auth/saml/logout"),
        ("get", "/auth/saml/logout/done"),
    ],
)
@pytest.mark.parametrize("state", ["never-stored", "stored-disabled", "enabled-then-disabled"])
def test_saml_urls__disabled__404(db, idp_keys, admin_client, browser, method, path, state):
    if state == "stored-disabled":
        SamlSettingsFactory(enabled=False, certificate=idp_keys.cert_body)
    elif state == "enabled-then-disabled":
        SamlSettingsFactory(certificate=idp_keys.cert_body)
        admin_client.post(
            "/api/admin/auth/saml/settings",
            data=json.dumps({"enabled": False}),
            content_type="application/json",
        )

    response = getattr(browser, method)(path)

    assert_error(response, 404, "NotFoundError")


def test_saml_urls__disabled__404_even_when_signed_in(db, browser):
    user = UserFactory(root_role_id=Role.ADMIN)
    user.refresh_from_db()  # the session hash needs the stored password
    browser.force_login(user)
    assert browser.get("/api/admin/auth/saml/settings").status_code == 200

    assert browser.get("/auth/saml/login").status_code == 404


# --- the Django admin's login page -------------------------------------------------------


def test_admin_login_page__offers_sso_while_saml_is_enabled(saml_settings, browser):
    response = browser.get("/admin/login/", {"next": "/admin/features/feature/"})

    assert response.status_code == 200
    assert (
        '<a class="button" href="/auth/saml/login?next=/admin/features/feature/">'
        "Sign in with SSO</a>" in response.content.decode()
    )


def test_admin_login_page__no_sso_while_saml_is_off(db, browser):
    response = browser.get("/admin/login/")

    assert response.status_code == 200
    assert "Sign in with SSO" not in response.content.decode()


# --- the callback's rate limit, and no lock-outs -----------------------------------------
# A SAML response cannot be guessed: a refused one locks nobody out. The callback answers at
# most SAML_CALLBACK_RATE_LIMIT_PER_MINUTE (10) responses per minute from one address.

PASSWORD = "correct horse battery staple"
OFFICE = "198.51.100.20"  # one address for a whole office behind a NAT
RATE_LIMIT_HEADERS = (
    "RateLimit-Policy",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
)


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    """The rate limit's clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(rate_limit, "monotonic", lambda: now[0])
    return now


def from_address(address: str) -> Client:
    return Client(enforce_csrf_checks=True, REMOTE_ADDR=address)


def password_sign_in(address: str, username: str, password: str = PASSWORD):
    return Client(REMOTE_ADDR=address).post(
        "/admin/login/", {"username": username, "password": password, "next": "/admin/"}
    )


@pytest.fixture
def password_admin(db):
    user = UserFactory(username="root", email="root@example.com", root_role_id=Role.ADMIN)
    user.set_password(PASSWORD)
    user.save()
    return user


def refused_responses(idp: TestIdP, rogue_idp: TestIdP, address: str, count: int) -> list:
    """`count` responses that are refused, of the kinds an office really sends: garbage,
    unsigned, signed by someone else, and a stale tab posting a used response again."""
    used_request, _ = start_sign_in(from_address(address), idp)
    used = idp.response(used_request, "alice@example.com")
    kinds = [
        lambda c: c.post("/auth/saml/callback", {"SAMLResponse": "PGdhcmJhZ2UvPg=="}),
        lambda c: sign_in(c, idp, "alice@example.com", sign_response=False, sign_assertion=False),
        lambda c: sign_in(c, rogue_idp, "alice@example.com", sign_response=True),
        lambda c: c.post("/auth/saml/callback", {"SAMLResponse": used}),
    ]
    return [kinds[index % len(kinds)](from_address(address)) for index in range(count)]


def test_refused_responses__many_from_one_address__saml_and_password_sign_ins_succeed(
    idp, rogue_idp, password_admin, clock
):
    UserFactory(email="alice@example.com")
    UserFactory(email="bob@example.com")

    refused = refused_responses(idp, rogue_idp, OFFICE, 9)  # the lockout used to come at 5

    assert [r.status_code for r in refused] == [403] * 9
    bob = from_address(OFFICE)
    assert sign_in(bob, idp, "bob@example.com").status_code == 302
    assert signed_in_user_id(bob) is not None
    assert password_sign_in(OFFICE, "root")["Location"] == "/admin/"
    assert AccessAttempt.objects.count() == 0  # nothing counted towards a lockout


def test_refused_responses__past_the_rate_limit__sign_ins_succeed_the_next_minute(
    idp, rogue_idp, password_admin, clock
):
    UserFactory(email="bob@example.com")
    refused = refused_responses(idp, rogue_idp, OFFICE, 25)
    assert [r.status_code for r in refused] == [403] * 10 + [429] * 15
    assert password_sign_in(OFFICE, "root")["Location"] == "/admin/"  # never limited

    clock[0] += 60

    bob = from_address(OFFICE)
    assert sign_in(bob, idp, "bob@example.com").status_code == 302
    assert signed_in_user_id(bob) is not None
    assert AccessAttempt.objects.count() == 0


def test_callback__past_the_rate_limit__429_page_before_signature_check(idp, rogue_idp, clock):
    UserFactory(email="alice@example.com")
    refused_responses(idp, rogue_idp, OFFICE, 10)
    clock[0] += 15
    browser = from_address(OFFICE)

    with mock.patch(
        "djangosaml2.views.AssertionConsumerServiceView.post", autospec=True
    ) as verification:
        response = sign_in(browser, idp, "alice@example.com")

    verification.assert_not_called()
    assert response.status_code == 429
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert {name: response[name] for name in (*RATE_LIMIT_HEADERS, "Retry-After")} == {
        "RateLimit-Policy": "10;w=60",
        "RateLimit-Limit": "10",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": "45",
        "Retry-After": "45",
    }
    text = re.sub(r"\s+", " ", response.content.decode())
    assert "<h1>Too many sign-in attempts</h1>" in text
    assert "Too many sign-in responses from your address. Try again in 45 seconds." in text
    assert signed_in_user_id(browser) is None


def test_callback__rate_limit__per_address(idp, rogue_idp, clock):
    UserFactory(email="alice@example.com")
    refused_responses(idp, rogue_idp, OFFICE, 11)

    elsewhere = from_address("203.0.113.5")
    response = sign_in(elsewhere, idp, "alice@example.com")

    assert response.status_code == 302
    assert signed_in_user_id(elsewhere) is not None


def test_callback__every_answer__rate_limit_headers(idp, clock):
    UserFactory(email="alice@example.com")
    browser = from_address(OFFICE)

    first = sign_in(browser, idp, "alice@example.com")
    clock[0] += 20
    missing = browser.post("/auth/saml/callback", {})

    assert first.status_code == 302
    assert {name: first[name] for name in RATE_LIMIT_HEADERS} == {
        "RateLimit-Policy": "10;w=60",
        "RateLimit-Limit": "10",
        "RateLimit-Remaining": "9",
        "RateLimit-Reset": "60",
    }
    assert "Retry-After" not in first
    assert missing.status_code == 400
    assert {name: missing[name] for name in RATE_LIMIT_HEADERS} == {
        "RateLimit-Policy": "10;w=60",
        "RateLimit-Limit": "10",
        "RateLimit-Remaining": "8",
        "RateLimit-Reset": "40",
    }


@pytest.mark.parametrize(
    ("limit", "statuses"),
    [
        pytest.param(2, [403, 403, 429, 429], id="two"),
        pytest.param(0, [403, 403, 403, 403], id="off"),
    ],
)
def test_callback__rate_limit_setting(idp, rogue_idp, clock, settings, limit, statuses):
    settings.SAML_CALLBACK_RATE_LIMIT_PER_MINUTE = limit

    refused = refused_responses(idp, rogue_idp, OFFICE, 4)

    assert [r.status_code for r in refused] == statuses
    assert ("RateLimit-Limit" in refused[0]) is bool(limit)


def test_sign_in__forged_responses_naming_a_user__do_not_lock_that_user_out(
    idp, rogue_idp, browser
):
    UserFactory(email="alice@example.com")
    for index in range(5):
        client = Client(enforce_csrf_checks=True, REMOTE_ADDR=f"10.0.9.{index}")
        sign_in(client, rogue_idp, "alice@example.com", sign_response=True)

    alice = Client(REMOTE_ADDR="10.0.8.1")
    signed_in = sign_in(alice, idp, "alice@example.com")

    assert signed_in.status_code == 302
    assert signed_in_user_id(alice) is not None


def test_sign_in__refusals_of_verified_responses__counted_in_login_attempts_lock_nobody(idp, clock):
    gone = UserFactory(email="gone@example.com", is_active=False, login_attempts=0)
    UserFactory(email="bob@example.com")

    refused = [sign_in(from_address(OFFICE), idp, "gone@example.com") for _ in range(6)]
    bob = from_address(OFFICE)
    signed_in = sign_in(bob, idp, "bob@example.com")

    assert [r.status_code for r in refused] == [403] * 6
    assert signed_in.status_code == 302
    assert signed_in_user_id(bob) is not None
    gone.refresh_from_db()
    assert gone.login_attempts == 6  # Unleash's loginAttempts, still counted
    assert AccessAttempt.objects.count() == 0


def test_sign_in__password_locked_out_account__saml_sign_in_still_succeeds(
    idp, password_admin, clock
):
    for _ in range(5):
        password_sign_in(OFFICE, "root@example.com", "wrong")
    assert password_sign_in(OFFICE, "root@example.com").status_code == 429

    browser = from_address(OFFICE)
    response = sign_in(browser, idp, "root@example.com")

    # The identity provider verified who this is; the lockout is about guessing passwords.
    assert response.status_code == 302
    assert signed_in_user_id(browser) == password_admin.pk


def test_pysaml2_is_loaded_only_when_a_saml_url_is_served(tmp_path):
    # pysaml2 with xmlschema costs each server process ~45 MiB: a process that loads the app,
    # its URLs and the admin, and serves other requests (the admin's SAML page with the SP
    # metadata included), must not import it.
    import subprocess
    import sys

    script = """
import sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
import flagadmin.wsgi
from django.contrib import admin
from django.test import Client
from django.urls import get_resolver
admin.autodiscover()
get_resolver().url_patterns
Client().get("/health")
Client().get("/admin/login/")
from flagadmin.core.models import Role, User
admin_user = User.objects.create(username="root", root_role_id=Role.ADMIN)
signed_in = Client()
signed_in.force_login(admin_user)
page = signed_in.get("/admin/auth_saml/samlsettings/")
download = signed_in.get("/admin/auth_saml/samlsettings/sp-metadata.xml")
print("admin", page.status_code, download.status_code, b"EntityDescriptor" in download.content)
print("before", "saml2" in sys.modules)
Client().get("/auth/saml/metadata")
print("after", "saml2" in sys.modules)
"""
    env = {
        "PATH": "/usr/bin:/bin",
        "SECRET_KEY": "x",
        "ENV_FILE": "",
        "DJANGO_SETTINGS_MODULE": "flagadmin.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    completed = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True
    )

    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.split("\n")[-4:] == [
        "admin 200 200 True",
        "before False",
        "after True",
        "",
    ]
