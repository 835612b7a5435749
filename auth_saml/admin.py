"""The SAML settings in the Django admin: one object, read-only, and what the identity
provider needs to know about this service provider, shown from the start.

Changes go through POST /api/admin/auth/saml/settings, which validates them and writes the
audit event; the admin page shows what is stored, with certificates shortened and the service
provider's private key never shown (only whether one is stored). Before any settings exist (and
after), the page shows the SP's entity id, callback URL and metadata, and offers the metadata
as a download to signed-in administrators only: the public `/auth/saml/metadata` answers 404
until sign-in is enabled, and the IdP needs the metadata before its own settings can be stored.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path, reverse

from auth_saml.certificates import certificate_fingerprint, shorten
from auth_saml.endpoints import sp_urls
from auth_saml.metadata import (
    CONTENT_TYPE,
    DOWNLOAD_NAME,
    NAMEID_FORMAT_EMAILADDRESS,
    sp_metadata_xml,
)
from auth_saml.models import SamlSettings

METADATA_URL_NAME = "auth_saml_samlsettings_sp_metadata"

# The admin's login page offers "Sign in with SSO" while SAML sign-in is enabled (the link
# brings the user back to the admin page they asked for).
admin.site.login_template = "auth_saml/admin_login.html"


@admin.register(SamlSettings)
class SamlSettingsAdmin(admin.ModelAdmin):
    list_display = ("__str__", "enabled", "entity_id", "sign_on_url", "updated_at")
    fieldsets = (
        (None, {"fields": ("enabled", "entity_id", "sign_on_url", "sign_out_url")}),
        (
            "Certificates",
            {"fields": ("certificate_short", "certificate_sha256", "sp_private_key_stored")},
        ),
        (
            "Users and groups",
            {
                "fields": (
                    "auto_create",
                    "email_domains",
                    "default_root_role",
                    "default_root_role_id",
                    "enable_group_syncing",
                    "group_json_path",
                )
            },
        ),
        (None, {"fields": ("created_at", "updated_at")}),
    )
    readonly_fields = (
        "enabled",
        "entity_id",
        "sign_on_url",
        "sign_out_url",
        "certificate_short",
        "certificate_sha256",
        "sp_private_key_stored",
        "auto_create",
        "email_domains",
        "default_root_role",
        "default_root_role_id",
        "enable_group_syncing",
        "group_json_path",
        "created_at",
        "updated_at",
    )

    @admin.display(description="Certificate")
    def certificate_short(self, obj: SamlSettings) -> str:
        return shorten(obj.certificate)

    @admin.display(description="Certificate SHA-256 fingerprint")
    def certificate_sha256(self, obj: SamlSettings) -> str:
        return certificate_fingerprint(obj.certificate) if obj.certificate else "—"

    @admin.display(description="SP private key (spCertificate)", boolean=True)
    def sp_private_key_stored(self, obj: SamlSettings) -> bool:
        return obj.sp_private_key_set

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: SamlSettings | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: SamlSettings | None = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context=None) -> HttpResponse:
        """One object: go straight to it when it exists; before, the service provider's
        details alone."""
        if SamlSettings.objects.filter(pk=SamlSettings.SINGLETON_ID).exists():
            return HttpResponseRedirect(
                reverse("admin:auth_saml_samlsettings_change", args=[SamlSettings.SINGLETON_ID])
            )
        extra_context = {**(extra_context or {}), **self.service_provider_context(stored=False)}
        return super().changelist_view(request, extra_context)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None
    ) -> HttpResponse:
        extra_context = {**(extra_context or {}), **self.service_provider_context(stored=True)}
        return super().change_view(request, object_id, form_url, extra_context)

    def service_provider_context(self, *, stored: bool) -> dict[str, Any]:
        """What the templates' service-provider section shows."""
        saml = SamlSettings.load() if stored else SamlSettings()
        urls = sp_urls()
        return {
            "service_provider": {
                "entity_id": urls["entity_id"],
                "acs_url": urls["acs"],
                "logout_url": urls["logout_done"],
                "name_id_format": NAMEID_FORMAT_EMAILADDRESS,
                "metadata_xml": sp_metadata_xml(),
                "metadata_download_url": reverse(f"admin:{METADATA_URL_NAME}"),
                "public_metadata_url": urls["metadata"],
                "public_metadata_served": saml.sign_in_enabled,
                "settings_stored": stored,
            }
        }

    def get_urls(self):
        metadata = self.admin_site.admin_view(self.metadata_view)
        return [path("sp-metadata.xml", metadata, name=METADATA_URL_NAME), *super().get_urls()]

    def metadata_view(self, request: HttpRequest) -> HttpResponse:
        """The SP metadata as a file, for the administrators who may see this page (the admin
        site has already sent everyone else to its login page)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        response = HttpResponse(sp_metadata_xml().encode("utf-8"), content_type=CONTENT_TYPE)
        response["Content-Disposition"] = f'attachment; filename="{DOWNLOAD_NAME}"'
        return response
