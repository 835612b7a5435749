"""The service provider's metadata (auth_saml/metadata.py), written without pysaml2: it says what
pysaml2's own writer says for the sign-in configuration, so an identity provider configured from
it before any settings exist accepts the sign-ins that configuration makes."""

from __future__ import annotations

import pytest
from saml2 import md
from saml2.metadata import entity_descriptor

from auth_saml.config import build_sp_config
from auth_saml.metadata import (
    ACCEPTED_DIGEST_ALGORITHMS,
    ACCEPTED_SIGNATURE_ALGORITHMS,
    sp_metadata_xml,
)
from tests.factories import SamlSettingsFactory
from tests.saml_idp import require_xmlsec1

PUBLIC_BASE_URL = "https://flags.example.com"


@pytest.fixture(autouse=True)
def public_base_url(settings):
    settings.PUBLIC_BASE_URL = PUBLIC_BASE_URL


def described(descriptor: md.EntityDescriptor) -> dict:
    """What an IdP reads from SP metadata, in a comparable form."""
    sp = descriptor.spsso_descriptor[0]
    algorithms = sorted(
        element.attributes["Algorithm"] for element in descriptor.extensions.extension_elements
    )
    return {
        "entity_id": descriptor.entity_id,
        "protocols": sp.protocol_support_enumeration,
        "authn_requests_signed": sp.authn_requests_signed,
        "want_assertions_signed": sp.want_assertions_signed,
        "acs": [(a.binding, a.location, a.index) for a in sp.assertion_consumer_service],
        "slo": [(s.binding, s.location) for s in sp.single_logout_service],
        "name_id_formats": [n.text.strip() for n in sp.name_id_format],
        "keys": len(sp.key_descriptor),
        "algorithms": algorithms,
    }


def test_sp_metadata__says_what_pysaml2_writes_for_the_sign_in_configuration(db):
    require_xmlsec1()
    saml = SamlSettingsFactory()
    ours = md.entity_descriptor_from_string(sp_metadata_xml())
    pysaml2s = entity_descriptor(build_sp_config(saml))
    accepted = ACCEPTED_SIGNATURE_ALGORITHMS | ACCEPTED_DIGEST_ALGORITHMS
    pysaml2s.extensions.extension_elements = [
        element
        for element in pysaml2s.extensions.extension_elements
        if element.attributes.get("Algorithm") in accepted
    ]

    assert described(ours) == described(md.entity_descriptor_from_string(str(pysaml2s)))


def test_sp_metadata__from_public_base_url_alone():
    descriptor = described(md.entity_descriptor_from_string(sp_metadata_xml()))

    assert descriptor == {
        "entity_id": PUBLIC_BASE_URL,
        "protocols": "urn:oasis:names:tc:SAML:2.0:protocol",
        "authn_requests_signed": "false",
        "want_assertions_signed": "false",
        "acs": [
            (
                "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST",
                f"{PUBLIC_BASE_URL}/auth/saml/callback",
                "1",
            )
        ],
        "slo": [
            (
                "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect",
                f"{PUBLIC_BASE_URL}/auth/saml/logout/done",
            ),
            (
                "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST",
                f"{PUBLIC_BASE_URL}/auth/saml/logout/done",
            ),
        ],
        "name_id_formats": ["urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"],
        "keys": 0,
        "algorithms": [
            "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256",
            "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384",
            "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512",
            "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
            "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384",
            "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512",
            "http://www.w3.org/2001/04/xmldsig-more#sha384",
            "http://www.w3.org/2001/04/xmlenc#sha256",
            "http://www.w3.org/2001/04/xmlenc#sha512",
        ],
    }


def test_sp_metadata__values_escaped(settings):
    settings.PUBLIC_BASE_URL = 'https://flags.example.com/a"b<c>&d'

    descriptor = md.entity_descriptor_from_string(sp_metadata_xml())

    assert descriptor.entity_id == 'https://flags.example.com/a"b<c>&d'
    assert descriptor.spsso_descriptor[0].assertion_consumer_service[0].location == (
        'https://flags.example.com/a"b<c>&d/auth/saml/callback'
    )
