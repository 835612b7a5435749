"""djangosaml2's views, answering 404 while SAML is disabled, with a clear refusal page.

- `/auth/saml/login`: starts sign-in (HTTP-Redirect binding to the IdP's `signOnUrl`).
- `/auth/saml/callback`: the assertion consumer service (the IdP posts its response here).
- `/auth/saml/metadata`: the service provider's metadata, to give to the IdP.
- `/auth/saml/logout`: signs out (through the IdP's `signOutUrl` when one is set).
- `/auth/saml/logout/done`: where the IdP sends its logout response (or its logout request).
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from defusedxml import ElementTree
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.signals import user_login_failed
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from djangosaml2 import views as saml_views
from djangosaml2.utils import get_fallback_login_redirect_url
from saml2.metadata import entity_descriptor
from saml2.response import StatusError, UnsolicitedResponse
from saml2.sigver import SigverError
from saml2.validate import ResponseLifetimeExceed, ToEarly

from auth_saml.backends import REFUSAL_ATTRIBUTE
from auth_saml.config import (
    ACCEPTED_DIGEST_ALGORITHMS,
    ACCEPTED_SIGNATURE_ALGORITHMS,
    NOT_ENABLED,
)
from auth_saml.models import SamlSettings
from flagadmin.api.signin import lockout_response
from flagadmin.core import signin

logger = logging.getLogger(__name__)

REFUSED_TEMPLATE = "auth_saml/sign_in_refused.html"
_SAML_ASSERTION_NS = "urn:oasis:names:tc:SAML:2.0:assertion"
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


class SamlMetadataView(SamlEnabledMixin, saml_views.MetadataView):
    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        descriptor = entity_descriptor(self.get_sp_config(request))
        if descriptor.extensions is not None:
            # pysaml2 lists every algorithm xmlsec1 knows (MD5 and SHA-1 included); advertise
            # only the ones the callback accepts.
            accepted = ACCEPTED_SIGNATURE_ALGORITHMS | ACCEPTED_DIGEST_ALGORITHMS
            descriptor.extensions.extension_elements = [
                element
                for element in descriptor.extensions.extension_elements
                if element.attributes.get("Algorithm") in accepted
            ]
        return HttpResponse(
            content=str(descriptor).encode("utf-8"), content_type="text/xml; charset=utf-8"
        )


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


def unverified_name_id(saml_response: str | None) -> str | None:
    """The NameID of a response not yet verified, to refuse it before the signature check when
    that user is locked out. Nothing else trusts this value."""
    if not saml_response:
        return None
    try:
        root = ElementTree.fromstring(base64.b64decode(saml_response, validate=False))
    except Exception:  # malformed, hostile (defusedxml refuses entities) or not base64
        return None
    element = root.find(f".//{{{_SAML_ASSERTION_NS}}}NameID")
    return element.text.strip() if element is not None and element.text else None


class SamlAcsView(SamlEnabledMixin, saml_views.AssertionConsumerServiceView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if "SAMLResponse" not in request.POST:
            return _refused(request, "The sign-in request carries no SAML response.", status=400)
        # Throttled before the signature check, which runs xmlsec1: a locked-out address (or
        # the user the response names) cannot make the server do that work.
        name_id = unverified_name_id(request.POST.get("SAMLResponse"))
        if signin.is_locked_out(request, signin.username_for_lockout(None, {"username": name_id})):
            return lockout_response(request)
        return super().post(request)

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
        if "session_info" not in kwargs:
            # The response itself failed verification; the backend (which counts refusals of
            # verified responses against their user) never ran. Anyone can post a response
            # naming anyone: it counts against the sender's address only, never against the
            # user it names, or five forged posts would lock that user out.
            user_login_failed.send(__name__, credentials={}, request=request)
        return _refused(request, reason or _reason_for(exception), status=403)

    def custom_redirect(self, user: Any, relay_state: str, session_info: dict) -> str | None:
        """Without an explicit `next`, admins land on the Django admin, everyone else on
        LOGIN_REDIRECT_URL (the API documentation, usable with the session)."""
        if relay_state == get_fallback_login_redirect_url() and getattr(user, "is_staff", False):
            return resolve_url(settings.SAML_ADMIN_REDIRECT_URL)
        return None


def _refused(request: HttpRequest, reason: str, status: int = 403) -> HttpResponse:
    return render(
        request,
        REFUSED_TEMPLATE,
        {"reason": reason, "login_url": resolve_url("saml2_login")},
        status=status,
    )


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
