"""The SAML settings in the Django admin: one read-only object, certificate shortened, the SP
private key never shown; and what the identity provider needs (entity id, callback URL,
metadata to copy or download) shown to administrators from the start, before any settings."""

from __future__ import annotations

import html
import re

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.test import Client

from auth_saml.metadata import sp_metadata_xml
from auth_saml.models import SamlSettings
from flagadmin.core.models import Role
from tests.factories import SamlSettingsFactory, UserFactory

CERT = "MIIC8DCCAdigAwIBAgIQ" + "A" * 900 + "XYZWw=="
CHANGE_URL = "/admin/auth_saml/samlsettings/1/change/"
LIST_URL = "/admin/auth_saml/samlsettings/"
METADATA_DOWNLOAD_URL = "/admin/auth_saml/samlsettings/sp-metadata.xml"
PUBLIC_BASE_URL = "https://flags.example.com"


@pytest.fixture(autouse=True)
def public_base_url(settings):
    settings.PUBLIC_BASE_URL = PUBLIC_BASE_URL


def signed_in(role_id: int) -> Client:
    user = UserFactory(root_role_id=role_id)
    user.refresh_from_db()  # the session hash needs the stored password
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture
def stored(db, key_pem) -> SamlSettings:
    saml = SamlSettingsFactory.build(certificate=CERT, email_domains="example.com")
    saml.sp_private_key = key_pem
    saml.save()
    return saml


def test_saml_admin__list__goes_to_the_one_object(stored):
    response = signed_in(Role.ADMIN).get(LIST_URL)

    assert response.status_code == 302
    assert response["Location"] == CHANGE_URL


def test_saml_admin__nothing_stored__empty_list(db):
    response = signed_in(Role.ADMIN).get(LIST_URL)

    assert response.status_code == 200
    assert "0 SAML settings" in response.content.decode()


def service_provider_section(page: str) -> str:
    match = re.search(r'<fieldset[^>]*id="saml-service-provider".*?</fieldset>', page, re.S)
    assert match, "no service-provider section on the page"
    return match.group(0)


def metadata_shown(section: str) -> str:
    match = re.search(r'<textarea[^>]*id="sp-metadata-xml"[^>]*>(.*?)</textarea>', section, re.S)
    assert match, "no metadata text box"
    return html.unescape(match.group(1))


def test_saml_admin__nothing_stored__shows_what_the_identity_provider_needs(db, client):
    response = signed_in(Role.ADMIN).get(LIST_URL)

    assert response.status_code == 200
    section = service_provider_section(response.content.decode())
    assert f'<code id="sp-entity-id">{PUBLIC_BASE_URL}</code>' in section
    assert f'<code id="sp-acs-url">{PUBLIC_BASE_URL}/auth/saml/callback</code>' in section
    assert f'<code id="sp-logout-url">{PUBLIC_BASE_URL}/auth/saml/logout/done</code>' in section
    assert metadata_shown(section) == sp_metadata_xml()
    assert f'href="{METADATA_DOWNLOAD_URL}"' in section
    assert "No SAML settings are stored yet" in section
    assert "until then it answers 404" in section
    # The public URL stays closed while SAML is off.
    assert client.get("/auth/saml/metadata").status_code == 404


def test_saml_admin__stored__shows_the_same_section(stored):
    response = signed_in(Role.ADMIN).get(CHANGE_URL)

    assert response.status_code == 200
    section = service_provider_section(response.content.decode())
    assert f'<code id="sp-entity-id">{PUBLIC_BASE_URL}</code>' in section
    assert f'<code id="sp-acs-url">{PUBLIC_BASE_URL}/auth/saml/callback</code>' in section
    assert metadata_shown(section) == sp_metadata_xml()
    assert "No SAML settings are stored yet" not in section
    assert "(served now: SAML sign-in is enabled)" in section


def test_saml_admin__metadata_download__admin_gets_the_file(db):
    response = signed_in(Role.ADMIN).get(METADATA_DOWNLOAD_URL)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/xml; charset=utf-8"
    assert response["Content-Disposition"] == ('attachment; filename="flagadmin-sp-metadata.xml"')
    assert response.content.decode() == sp_metadata_xml()
    assert f'entityID="{PUBLIC_BASE_URL}"' in response.content.decode()


def test_saml_admin__metadata_download__same_document_as_public_url_once_enabled(stored, client):
    downloaded = signed_in(Role.ADMIN).get(METADATA_DOWNLOAD_URL)
    public = client.get("/auth/saml/metadata")

    assert public.status_code == 200
    assert public["Content-Type"] == downloaded["Content-Type"]
    assert public.content == downloaded.content


@pytest.mark.parametrize(
    "who",
    [
        pytest.param(None, id="anonymous"),
        pytest.param(Role.EDITOR, id="editor"),
        pytest.param(Role.VIEWER, id="viewer"),
    ],
)
def test_saml_admin__metadata_download__refused_to_anyone_but_admins(db, who):
    client = Client() if who is None else signed_in(who)

    response = client.get(METADATA_DOWNLOAD_URL)

    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={METADATA_DOWNLOAD_URL}"
    assert b"EntityDescriptor" not in response.content


def test_saml_admin__nothing_stored__page_refused_to_non_admins(db):
    response = signed_in(Role.EDITOR).get(LIST_URL)

    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={LIST_URL}"


def test_saml_admin__object__certificate_shortened_key_never_shown(stored, key_pem):
    response = signed_in(Role.ADMIN).get(CHANGE_URL)

    assert response.status_code == 200
    page = response.content.decode()
    assert "MIIC8DCCAdig…AAAAAXYZWw==" in page
    assert CERT not in page
    assert key_pem.splitlines()[1] not in page
    assert stored.sp_certificate_encrypted not in page
    assert "PRIVATE KEY" not in page
    assert "https://idp.test/sso" in page
    assert "/auth/saml/callback" in page


def test_saml_admin__read_only(stored):
    client = signed_in(Role.ADMIN)

    response = client.post(CHANGE_URL, {"enabled": "", "entity_id": "changed"})

    assert response.status_code == 403
    stored.refresh_from_db()
    assert stored.entity_id == "https://idp.test/metadata"


def test_saml_admin__editor__not_admitted(stored):
    response = signed_in(Role.EDITOR).get(CHANGE_URL)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
