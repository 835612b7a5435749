"""The SAML settings in the Django admin: one read-only object, certificate shortened, the SP
private key never shown."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.test import Client

from auth_saml.models import SamlSettings
from flagadmin.core.models import Role
from tests.factories import SamlSettingsFactory, UserFactory

CERT = "MIIC8DCCAdigAwIBAgIQ" + "A" * 900 + "XYZWw=="
CHANGE_URL = "/admin/auth_saml/samlsettings/1/change/"
LIST_URL = "/admin/auth_saml/samlsettings/"


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
