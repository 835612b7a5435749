"""System check: SAML sign-in verifies signatures with the xmlsec1 program (not a pip package).

Only where SAML is in use: enabled in the stored settings, which only the checks given a database
can read (`migrate` passes its own; `check`, `runserver` and the other commands pass none). So
scripts/serve, which runs `migrate` then `ensureadmintoken`, warns once, and never a newcomer
who has not turned SAML on."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from django.conf import settings
from django.core import checks
from django.db import DatabaseError


@checks.register()
def xmlsec1_installed(
    app_configs: object = None, databases: Sequence[str] | None = None, **kwargs: object
) -> list[checks.CheckMessage]:
    if getattr(settings, "SAML_XMLSEC_BINARY", None) or shutil.which("xmlsec1"):
        return []
    if not any(_saml_enabled(alias) for alias in databases or ()):
        return []
    return [
        checks.Warning(
            "xmlsec1 was not found: SAML sign-in is enabled but cannot verify signatures, and "
            "its URLs will fail.",
            hint="Install it (Debian/Ubuntu: apt-get install xmlsec1) or set "
            "SAML_XMLSEC_BINARY to its path.",
            id="auth_saml.W001",
        )
    ]


def _saml_enabled(alias: str) -> bool:
    from auth_saml.models import SamlSettings

    try:
        return SamlSettings.objects.using(alias).filter(enabled=True).exists()
    except DatabaseError:  # not migrated yet: nothing is enabled
        return False
