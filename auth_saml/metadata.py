"""This service provider's SAML metadata: what the identity provider needs to know about it.

It depends on `PUBLIC_BASE_URL` alone (entity id, callback, logout URL) and on nothing the IdP's
settings hold, so it exists before any settings are stored: the admin's SAML page shows it from
the start, and `/auth/saml/metadata` serves the same document while sign-in is enabled.

Written here as XML rather than by pysaml2 (`saml2.metadata.entity_descriptor`), which would
import pysaml2 and xmlschema (~45 MiB) into every process that shows the admin's SAML page, and
ask the xmlsec1 program for its algorithms on each call. `tests/auth_saml/test_saml_metadata.py`
holds this document to what pysaml2 writes for the sign-in configuration (`auth_saml.config`), and
the sign-in tests' identity provider reads it.

It carries no signing certificate: this service provider signs nothing but logout requests,
with the optional key of `spCertificate`, whose certificate the IdP is given by hand (as
Unleash's guides say).
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from auth_saml.endpoints import sp_urls

BINDING_HTTP_POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
BINDING_HTTP_REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
NAMEID_FORMAT_EMAILADDRESS = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"

# The only algorithms accepted in signed responses, and advertised in the metadata: SHA-256 and
# stronger. pysaml2 verifies whatever algorithm a signature names (SHA-1, even MD5).
_XMLDSIG_MORE = "http://www.w3.org/2001/04/xmldsig-more#"
ACCEPTED_SIGNATURE_ALGORITHMS = frozenset(
    _XMLDSIG_MORE + name
    for name in (
        "rsa-sha256",
        "rsa-sha384",
        "rsa-sha512",
        "ecdsa-sha256",
        "ecdsa-sha384",
        "ecdsa-sha512",
    )
)
ACCEPTED_DIGEST_ALGORITHMS = frozenset(
    {
        "http://www.w3.org/2001/04/xmlenc#sha256",
        _XMLDSIG_MORE + "sha384",
        "http://www.w3.org/2001/04/xmlenc#sha512",
    }
)

CONTENT_TYPE = "text/xml; charset=utf-8"
DOWNLOAD_NAME = "flagadmin-sp-metadata.xml"


def sp_metadata_xml() -> str:
    """The SP's EntityDescriptor (every value escaped), indented to be read and copied."""
    urls = sp_urls()
    digests = "".join(
        f"\n    <alg:DigestMethod Algorithm={quoteattr(algorithm)}/>"
        for algorithm in sorted(ACCEPTED_DIGEST_ALGORITHMS)
    )
    signing = "".join(
        f"\n    <alg:SigningMethod Algorithm={quoteattr(algorithm)}/>"
        for algorithm in sorted(ACCEPTED_SIGNATURE_ALGORITHMS)
    )
    logout = quoteattr(urls["logout_done"])
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"'
        ' xmlns:alg="urn:oasis:names:tc:SAML:metadata:algsupport"'
        f" entityID={quoteattr(urls['entity_id'])}>\n"
        f"  <md:Extensions>{digests}{signing}\n  </md:Extensions>\n"
        '  <md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"'
        ' AuthnRequestsSigned="false" WantAssertionsSigned="false">\n'
        f'    <md:SingleLogoutService Binding="{BINDING_HTTP_REDIRECT}" Location={logout}/>\n'
        f'    <md:SingleLogoutService Binding="{BINDING_HTTP_POST}" Location={logout}/>\n'
        f"    <md:NameIDFormat>{escape(NAMEID_FORMAT_EMAILADDRESS)}</md:NameIDFormat>\n"
        f'    <md:AssertionConsumerService Binding="{BINDING_HTTP_POST}"'
        f' Location={quoteattr(urls["acs"])} index="1"/>\n'
        "  </md:SPSSODescriptor>\n"
        "</md:EntityDescriptor>\n"
    )
