"""SAML 2.0 sign-in, mounted at /auth/saml/ (Unleash's paths). The URL names are djangosaml2's,
which it reverses internally."""

from django.urls import path

from auth_saml import sso_views

urlpatterns = [
    path("login", sso_views.SamlLoginView.as_view(), name="saml2_login"),
    path("callback", sso_views.SamlAcsView.as_view(), name="saml2_acs"),
    path("metadata", sso_views.SamlMetadataView.as_view(), name="saml2_metadata"),
    path("logout", sso_views.SamlLogoutInitView.as_view(), name="saml2_logout"),
    path("logout/done", sso_views.SamlLogoutDoneView.as_view(), name="saml2_ls"),
]
