"""Template context for pages that offer SAML sign-in (the Django admin's login page)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest
from django.urls import reverse

from auth_saml.models import SamlSettings


def saml_sign_in(request: HttpRequest) -> dict[str, Callable[[], str]]:
    """`saml_sign_in_url`: /auth/saml/login while SAML sign-in is enabled, else empty. A
    callable, so the settings are read only by a template that uses it, not on every page."""

    def url() -> str:
        return reverse("saml2_login") if SamlSettings.load().sign_in_enabled else ""

    return {"saml_sign_in_url": url}
