"""The SAML settings endpoint of the admin API (mounted under /api/admin/)."""

from django.urls import path

from auth_saml.views import SamlSettingsView

urlpatterns = [
    path("auth/saml/settings", SamlSettingsView.as_view(), name="saml-settings"),
]
