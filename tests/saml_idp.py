"""A throwaway SAML identity provider for the sign-in tests: pysaml2's own IdP class
(`saml2.server.Server`) signing real responses with a key generated for the test session.

It is given the service provider's metadata as the SP publishes it at /auth/saml/metadata, so
Destination, Recipient, Audience and InResponseTo are whatever a real IdP would send.
"""

from __future__ import annotations

import base64
import datetime as dt
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.saml import (
    AUTHN_PASSWORD_PROTECTED,
    NAME_FORMAT_BASIC,
    NAMEID_FORMAT_EMAILADDRESS,
    NameID,
)
from saml2.server import Server
from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256

IDP_ENTITY_ID = "https://idp.test/metadata"
IDP_SSO_URL = "https://idp.test/sso"
IDP_SLO_URL = "https://idp.test/slo"


def require_xmlsec1() -> str:
    path = shutil.which("xmlsec1")
    if path is None:
        pytest.fail(
            "xmlsec1 is not installed: SAML sign-in tests need it to sign and verify "
            "(Debian/Ubuntu: apt-get install xmlsec1).",
            pytrace=False,
        )
    return path


@dataclass(frozen=True)
class KeyPair:
    key_pem: str
    cert_pem: str

    @property
    def cert_body(self) -> str:
        """The certificate as IdPs hand it out: bare base64 without PEM armour."""
        return "".join(line for line in self.cert_pem.splitlines() if "-----" not in line)


def make_key_pair(common_name: str = "test-idp") -> KeyPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return KeyPair(key_pem=key_pem, cert_pem=cert.public_bytes(serialization.Encoding.PEM).decode())


class TestIdP:
    """pysaml2's IdP, configured with the SP metadata and a key pair."""

    __test__ = False  # not a test class

    def __init__(self, workdir: Path, keys: KeyPair, sp_metadata_xml: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        key_file = workdir / "idp.key"
        cert_file = workdir / "idp.crt"
        key_file.write_text(keys.key_pem)
        cert_file.write_text(keys.cert_pem)
        # Send attributes under the names they are given (as Okta or Entra ID do), not renamed
        # through pysaml2's default maps (firstName would become an eIDAS URI).
        map_dir = workdir / "attribute_maps"
        map_dir.mkdir(exist_ok=True)
        (map_dir / "flagadmin_test_idp_basic_names.py").write_text(
            f"MAP = {{'identifier': {NAME_FORMAT_BASIC!r}, 'fro': {{}}, 'to': {{}}}}\n"
        )
        conf = IdPConfig()
        conf.load(
            {
                "entityid": IDP_ENTITY_ID,
                "xmlsec_binary": require_xmlsec1(),
                "key_file": str(key_file),
                "cert_file": str(cert_file),
                "attribute_map_dir": str(map_dir),
                "service": {
                    "idp": {
                        "endpoints": {
                            "single_sign_on_service": [(IDP_SSO_URL, BINDING_HTTP_REDIRECT)],
                            "single_logout_service": [(IDP_SLO_URL, BINDING_HTTP_REDIRECT)],
                        },
                        "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                        "policy": {
                            "default": {"lifetime": {"minutes": 15}, "name_form": NAME_FORMAT_BASIC}
                        },
                    }
                },
                "metadata": {"inline": [sp_metadata_xml]},
            }
        )
        self.server = Server(config=conf)

    def read_authn_request(self, location: str) -> tuple[Any, str]:
        """The AuthnRequest and RelayState of the SP's HTTP-Redirect to the IdP."""
        query = parse_qs(urlparse(location).query)
        request = self.server.parse_authn_request(
            query["SAMLRequest"][0], BINDING_HTTP_REDIRECT
        ).message
        return request, query["RelayState"][0]

    def response(
        self,
        request: Any,
        email: str,
        attributes: dict[str, list[str]] | None = None,
        *,
        sign_response: bool = False,
        sign_assertion: bool = True,
        in_response_to: str | None = None,
        sign_alg: str = SIG_RSA_SHA256,
        digest_alg: str = DIGEST_SHA256,
    ) -> str:
        """A base64 SAMLResponse answering `request` (HTTP-POST binding)."""
        response = self.server.create_authn_response(
            identity=attributes or {},
            in_response_to=in_response_to or request.id,
            destination=request.assertion_consumer_service_url,
            sp_entity_id=request.issuer.text,
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=email),
            authn={"class_ref": AUTHN_PASSWORD_PROTECTED, "authn_auth": "https://idp.test/login"},
            sign_response=sign_response,
            sign_assertion=sign_assertion,
            sign_alg=sign_alg,
            digest_alg=digest_alg,
            binding=BINDING_HTTP_POST,
        )
        return base64.b64encode(str(response).encode("utf-8")).decode("ascii")
