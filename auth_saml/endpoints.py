"""The service provider's own URLs, which the admin shows and the SAML configuration uses.

Apart from `config` on purpose: pysaml2 (with xmlschema, ~45 MiB per process) is imported only
when a SAML URL is first served, not by every process that shows the admin.
"""

from __future__ import annotations

from django.conf import settings


def sp_urls() -> dict[str, str]:
    """The entity id (the instance's URL, as Unleash's), callback, logout and metadata URLs."""
    base = settings.PUBLIC_BASE_URL.rstrip("/")
    return {
        "entity_id": base,
        "acs": f"{base}/auth/saml/callback",
        "logout_done": f"{base}/auth/saml/logout/done",
        "metadata": f"{base}/auth/saml/metadata",
    }
