"""System check: SAML sign-in verifies signatures with the xmlsec1 program (not a pip package)."""

from __future__ import annotations

import shutil

from django.conf import settings
from django.core import checks


@checks.register()
def xmlsec1_installed(app_configs, **kwargs) -> list[checks.CheckMessage]:
    path = getattr(settings, "SAML_XMLSEC_BINARY", None) or shutil.which("xmlsec1")
    if path:
        return []
    return [
        checks.Warning(
            "xmlsec1 was not found: SAML sign-in cannot verify signatures and its URLs will fail.",
            hint="Install it (Debian/Ubuntu: apt-get install xmlsec1) or set "
            "SAML_XMLSEC_BINARY to its path.",
            id="auth_saml.W001",
        )
    ]
