"""The SAML settings in the Django admin: one object, read-only.

Changes go through POST /api/admin/auth/saml/settings, which validates them and writes the
audit event; the admin page shows what is stored, with certificates shortened and the service
provider's private key never shown (only whether one is stored).
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from auth_saml.certificates import certificate_fingerprint, shorten
from auth_saml.endpoints import sp_urls
from auth_saml.models import SamlSettings

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
        (
            "This service provider (give these to the identity provider)",
            {"fields": ("sp_entity_id", "sp_acs_url", "sp_metadata_url")},
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
        "sp_entity_id",
        "sp_acs_url",
        "sp_metadata_url",
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

    @admin.display(description="SP entity id")
    def sp_entity_id(self, obj: SamlSettings) -> str:
        return sp_urls()["entity_id"]

    @admin.display(description="Assertion consumer service (callback) URL")
    def sp_acs_url(self, obj: SamlSettings) -> str:
        return sp_urls()["acs"]

    @admin.display(description="SP metadata URL")
    def sp_metadata_url(self, obj: SamlSettings) -> str:
        return sp_urls()["metadata"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: SamlSettings | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: SamlSettings | None = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context=None) -> HttpResponse:
        """One object: go straight to it when it exists."""
        if SamlSettings.objects.filter(pk=SamlSettings.SINGLETON_ID).exists():
            return HttpResponseRedirect(
                reverse("admin:auth_saml_samlsettings_change", args=[SamlSettings.SINGLETON_ID])
            )
        return super().changelist_view(request, extra_context)
