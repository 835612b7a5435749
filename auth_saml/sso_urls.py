"""SAML 2.0 sign-in, mounted at /auth/saml/ (Unleash's paths). The URL names are djangosaml2's,
which it reverses internally.

The views are imported when a SAML URL is first served: they bring pysaml2 and xmlschema
(~45 MiB per process), which an instance that does not use SAML never needs.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt


def _lazy(view_class: str, *, posted_by_identity_provider: bool = False) -> Callable:
    """The view of `auth_saml.sso_views.<view_class>`, imported on its first request.
    `posted_by_identity_provider`: the identity provider posts to it from its own site, so it
    is exempt from CSRF as djangosaml2's view is (the middleware reads the URL's callback, this
    function, not the view's own mark)."""

    @cache
    def view() -> Callable:
        from auth_saml import sso_views

        return getattr(sso_views, view_class).as_view()

    def serve(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        return view()(request, *args, **kwargs)

    return csrf_exempt(serve) if posted_by_identity_provider else serve


urlpatterns = [
    path("login", _lazy("SamlLoginView"), name="saml2_login"),
    path("callback", _lazy("SamlAcsView", posted_by_identity_provider=True), name="saml2_acs"),
    path("metadata", _lazy("SamlMetadataView"), name="saml2_metadata"),
    path("logout", _lazy("SamlLogoutInitView"), name="saml2_logout"),
    path(
        "logout/done",
        _lazy("SamlLogoutDoneView", posted_by_identity_provider=True),
        name="saml2_ls",
    ),
]
