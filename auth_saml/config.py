"""The pysaml2 service-provider configuration, built on every SAML request from the stored
settings (djangosaml2's `SAML_CONFIG_LOADER`).

The stored settings hold no IdP metadata document, only its entity id, sign-on URL, certificate
and sign-out URL, so a minimal IdP `EntityDescriptor` is written from them and loaded inline.
The service provider's own entity id and URLs come from `settings.PUBLIC_BASE_URL`, never from
the request's Host header (which the client controls). Building the configuration takes about a
millisecond, so it is not cached: a POST of new settings applies to the very next sign-in.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpRequest
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import SPConfig
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS
from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256

from auth_saml.certificates import certificate_body, private_key_pem
from auth_saml.endpoints import sp_urls
from auth_saml.models import SamlSettings
from auth_saml.services import CLOCK_TOLERANCE_SECONDS

# A directory holding one attribute map bound to a name format no IdP sends: every attribute
# then keeps its raw Name (pysaml2's default maps would rename e.g. `urn:oid:…` to `mail`, and
# `groupJsonPath` must match exactly what the IdP administrator configured).
ATTRIBUTE_MAP_DIR = str(Path(__file__).resolve().parent / "saml_attribute_maps")

NOT_ENABLED = "SAML 2.0 sign-in is not enabled on this instance."


def xmlsec_binary() -> str:
    path = getattr(settings, "SAML_XMLSEC_BINARY", None) or shutil.which("xmlsec1")
    if not path:
        raise ImproperlyConfigured(
            "SAML sign-in needs the xmlsec1 program (Debian/Ubuntu: apt-get install xmlsec1), "
            "or SAML_XMLSEC_BINARY set to its path."
        )
    return path


def config_loader(request: HttpRequest | None = None) -> SPConfig:
    """djangosaml2's SAML_CONFIG_LOADER: 404 while SAML is disabled."""
    saml_settings = SamlSettings.load()
    if not saml_settings.sign_in_enabled:
        raise Http404(NOT_ENABLED)
    return build_sp_config(saml_settings)


def build_sp_config(saml_settings: SamlSettings) -> SPConfig:
    urls = sp_urls()
    sp_service = {
        "name_id_format": NAMEID_FORMAT_EMAILADDRESS,  # advertised in the SP metadata
        "name_id_policy_format": NAMEID_FORMAT_EMAILADDRESS,  # asked for in the AuthnRequest
        "endpoints": {
            "assertion_consumer_service": [(urls["acs"], BINDING_HTTP_POST)],
            "single_logout_service": [
                (urls["logout_done"], BINDING_HTTP_REDIRECT),
                (urls["logout_done"], BINDING_HTTP_POST),
            ],
        },
        # SP-initiated sign-in only: a response must answer a request of this browser session.
        "allow_unsolicited": False,
        # The response or its assertion must be signed (never neither): Entra ID signs only
        # the assertion by default, others only the response.
        "want_response_signed": False,
        "want_assertions_signed": False,
        "want_assertions_or_response_signed": True,
        "authn_requests_signed": False,
        "signing_algorithm": SIG_RSA_SHA256,  # pysaml2 defaults to SHA-1
        "digest_algorithm": DIGEST_SHA256,
        "logout_requests_signed": False,
    }
    conf = {
        "entityid": urls["entity_id"],
        "xmlsec_binary": xmlsec_binary(),
        "attribute_map_dir": ATTRIBUTE_MAP_DIR,
        "allow_unknown_attributes": True,
        "accepted_time_diff": CLOCK_TOLERANCE_SECONDS,
        "service": {"sp": sp_service},
        "metadata": {"inline": [idp_metadata_xml(saml_settings)]},
    }
    key = saml_settings.sp_private_key
    key_pem = private_key_pem(key) if key else None
    if key_pem is not None:
        conf["key_file"] = _key_file(key_pem)
        sp_service["logout_requests_signed"] = True
    sp_config = SPConfig()
    sp_config.load(conf)
    return sp_config


def idp_metadata_xml(saml_settings: SamlSettings) -> str:
    """A minimal IdP EntityDescriptor from the stored settings (every value escaped)."""
    sign_on = quoteattr((saml_settings.sign_on_url or "").strip())
    slo = ""
    if (saml_settings.sign_out_url or "").strip():
        sign_out = quoteattr(saml_settings.sign_out_url.strip())
        slo = (
            f'<md:SingleLogoutService Binding="{BINDING_HTTP_REDIRECT}" Location={sign_out}/>'
            f'<md:SingleLogoutService Binding="{BINDING_HTTP_POST}" Location={sign_out}/>'
        )
    certificate = escape(certificate_body(saml_settings.certificate or ""))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" '
        'xmlns:ds="http://www.w3.org/2000/09/xmldsig#" '
        f"entityID={quoteattr((saml_settings.entity_id or '').strip())}>"
        '<md:IDPSSODescriptor WantAuthnRequestsSigned="false" '
        'protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
        '<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data>'
        f"<ds:X509Certificate>{certificate}</ds:X509Certificate>"
        "</ds:X509Data></ds:KeyInfo></md:KeyDescriptor>"
        f"{slo}"
        f"<md:NameIDFormat>{NAMEID_FORMAT_EMAILADDRESS}</md:NameIDFormat>"
        f'<md:SingleSignOnService Binding="{BINDING_HTTP_REDIRECT}" Location={sign_on}/>'
        f'<md:SingleSignOnService Binding="{BINDING_HTTP_POST}" Location={sign_on}/>'
        "</md:IDPSSODescriptor></md:EntityDescriptor>"
    )


# --- the SP private key as a file -------------------------------------------------------------
# pysaml2 reads keys from file paths only. The decrypted key is written once per process into a
# private directory (0700, file 0600) named by its hash, and removed when the process exits.
_key_dir: str | None = None
_key_lock = threading.Lock()


def _key_file(pem: bytes) -> str:
    global _key_dir
    with _key_lock:
        if _key_dir is None:
            _key_dir = tempfile.mkdtemp(prefix="flagadmin-saml-")
            atexit.register(shutil.rmtree, _key_dir, True)
        path = os.path.join(_key_dir, hashlib.sha256(pem).hexdigest() + ".pem")
        if not os.path.exists(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(pem)
        return path
