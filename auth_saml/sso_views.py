"""djangosaml2's views, answering 404 while SAML is disabled, with a clear refusal page.

- `/auth/saml/login`: starts sign-in (HTTP-Redirect binding to the IdP's `signOnUrl`).
- `/auth/saml/callback`: the assertion consumer service (the IdP posts its response here),
  rate-limited per address (`auth_saml.rate_limit`); a refused response locks nobody out.
- `/auth/saml/metadata`: the service provider's metadata (`auth_saml.metadata`, which the
  admin's SAML page also shows, from before any settings are stored).
- `/auth/saml/logout`: signs out (through the IdP's `signOutUrl` when one is set).
- `/auth/saml/logout/done`: where the IdP sends its logout response (or its logout request).
"""

from __future__ import annotations

import logging
from typing import Any

from defusedxml import ElementTree
from django.conf import settings
from django.contrib import auth
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from django.views import View
from djangosaml2 import views as saml_views
from djangosaml2.utils import get_fallback_login_redirect_url
from saml2.response import StatusError, UnsolicitedResponse
from saml2.sigver import SigverError
from saml2.validate import ResponseLifetimeExceed, ToEarly

from auth_saml import rate_limit
from auth_saml.backends import REFUSAL_ATTRIBUTE
from auth_saml.config import NOT_ENABLED
from auth_saml.metadata import (
    ACCEPTED_DIGEST_ALGORITHMS,
    ACCEPTED_SIGNATURE_ALGORITHMS,
    CONTENT_TYPE,
    sp_metadata_xml,
)
from auth_saml.models import SamlSettings
from flagadmin.core.signin import client_address

logger = logging.getLogger(__name__)

REFUSED_TEMPLATE = "auth_saml/sign_in_refused.html"
_XMLDSIG_NS = "http://www.w3.org/2000/09/xmldsig#"


class SamlEnabledMixin:
    """404 on every SAML URL while SAML is disabled (checked before anything else, so that an
    already signed-in user is not redirected by the login view either).

    Checked in `setup`, not `dispatch`: `as_view` copies the attributes of `dispatch` onto the
    view function, and djangosaml2's `dispatch` carries `csrf_exempt`, which the callback needs
    (the IdP's cross-site POST has no CSRF token)."""

    def setup(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        if not SamlSettings.load().sign_in_enabled:
            raise Http404(NOT_ENABLED)
        super().setup(request, *args, **kwargs)


class SamlLoginView(SamlEnabledMixin, saml_views.LoginView):
    pass


class SamlMetadataView(SamlEnabledMixin, View):
    """The document the admin's SAML page shows from the start (`auth_saml.metadata`)."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return HttpResponse(content=sp_metadata_xml().encode("utf-8"), content_type=CONTENT_TYPE)


def _reason_for(exception: BaseException | None) -> str:
    if isinstance(exception, UnsolicitedResponse):
        return (
            "This sign-in response does not answer a sign-in started from this browser, or it "
            "has already been used. Please start signing in again from this site."
        )
    if isinstance(exception, SigverError):
        return (
            "The sign-in response is not signed, or not signed with the identity provider's "
            "certificate configured on this instance."
        )
    if isinstance(exception, ToEarly | ResponseLifetimeExceed):
        return (
            "The sign-in response is not valid at this time: it has expired, or the clocks of "
            "the identity provider and this server disagree."
        )
    if isinstance(exception, StatusError):
        return "The identity provider did not authenticate you."
    return "The sign-in response could not be verified."


def refused_algorithms(xml: str) -> list[str]:
    """The signature and digest algorithms of the response's signatures that are not accepted."""
    root = ElementTree.fromstring(xml.encode("utf-8"))
    refused = []
    for tag, accepted in (
        ("SignatureMethod", ACCEPTED_SIGNATURE_ALGORITHMS),
        ("DigestMethod", ACCEPTED_DIGEST_ALGORITHMS),
    ):
        for element in root.iter(f"{{{_XMLDSIG_NS}}}{tag}"):
            algorithm = element.get("Algorithm", "")
            if algorithm not in accepted:
                refused.append(algorithm)
    return refused


class SamlAcsView(SamlEnabledMixin, saml_views.AssertionConsumerServiceView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Counted before anything else, the signature check (xmlsec1) above all: an address
        # past the limit makes the server do no work until its minute is over. Nobody is
        # locked out: a refused response is not a guess (docs/sign-in.md).
        allowance = rate_limit.take(client_address(request))
        if not allowance.allowed:
            response = _refused(
                request,
                "Too many sign-in responses from your address. Try again in "
                f"{_seconds(allowance.reset_seconds)}.",
                status=429,
                title="Too many sign-in attempts",
            )
        elif "SAMLResponse" not in request.POST:
            response = _refused(
                request, "The sign-in request carries no SAML response.", status=400
            )
        else:
            response = super().post(request)
        if allowance.limit:
            for header, value in allowance.headers().items():
                response[header] = value
        return response

    def custom_validation(self, response: Any) -> None:
        """After pysaml2's checks: refuse signatures made with SHA-1 or weaker."""
        refused = refused_algorithms(response.xmlstr)
        if refused:
            setattr(
                self.request,
                REFUSAL_ATTRIBUTE,
                "The sign-in response is signed with an algorithm this instance does not accept "
                f"({', '.join(sorted(set(refused)))}). Ask your administrator to configure the "
                "identity provider to sign with RSA-SHA256.",
            )
            raise ValueError("weak signature algorithm")

    def handle_acs_failure(
        self,
        request: HttpRequest,
        exception: BaseException | None = None,
        status: int = 403,
        **kwargs: Any,
    ) -> HttpResponse:
        """Every refusal is a 403 page saying why (djangosaml2 uses 400 for some)."""
        reason = getattr(request, REFUSAL_ATTRIBUTE, None)
        return _refused(request, reason or _reason_for(exception), status=403)

    def custom_redirect(self, user: Any, relay_state: str, session_info: dict) -> str | None:
        """Without an explicit `next`, admins land on the Django admin, everyone else on
        LOGIN_REDIRECT_URL (the API documentation, usable with the session)."""
        if relay_state == get_fallback_login_redirect_url() and getattr(user, "is_staff", False):
            return resolve_url(settings.SAML_ADMIN_REDIRECT_URL)
        return None


def _refused(
    request: HttpRequest, reason: str, status: int = 403, title: str = "Sign-in refused"
) -> HttpResponse:
    return render(
        request,
        REFUSED_TEMPLATE,
        {"title": title, "reason": reason, "login_url": resolve_url("saml2_login")},
        status=status,
    )


def _seconds(seconds: int) -> str:
    return "1 second" if seconds == 1 else f"{seconds} seconds"


class SamlLogoutInitView(SamlEnabledMixin, saml_views.LogoutInitView):
    """Signs out of this instance, and of the IdP when it has a `signOutUrl` and the session
    came from a SAML sign-in; otherwise a local sign-out."""

    def handle_no_permission(self) -> HttpResponse:
        return HttpResponseRedirect(resolve_url(settings.LOGOUT_REDIRECT_URL))

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        saml_settings = SamlSettings.load()
        subject_id = saml_views._get_subject_id(request.saml_session)
        if not (saml_settings.sign_out_url or "").strip() or subject_id is None:
            auth.logout(request)
            return HttpResponseRedirect(resolve_url(settings.LOGOUT_REDIRECT_URL))
        return super().get(request, *args, **kwargs)


class SamlLogoutDoneView(SamlEnabledMixin, saml_views.LogoutView):
    pass
