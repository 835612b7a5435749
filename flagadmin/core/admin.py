"""Django admin of the core: users, roles, API tokens (secret shown once) and the audit log."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Group as DjangoGroup
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from flagadmin.core import crypto
from flagadmin.core.admin_audit import AuditedModelAdmin
from flagadmin.core.admin_fields import LinesField
from flagadmin.core.audit import event_time, record_event
from flagadmin.core.models import AccountType, ApiToken, AuditEvent, Role, TokenType, User
from flagadmin.core.services import environment_exists, token_event_data, unknown_projects
from flagadmin.core.tokens import SCOPED_TYPES, assign_secret

admin.site.site_header = "flagadmin administration"
admin.site.site_title = "flagadmin"
# "View site": the small start page that points to the API documentation and the admin.
admin.site.site_url = "/"
# The lists are wide (a column per environment, the token list's dates): the navigation sidebar
# took 300 px and cut off their last columns at 1400 px. The index and breadcrumbs navigate.
admin.site.enable_nav_sidebar = False

# Django's own permission groups are unused (roles and user groups are the project's): one
# "Groups" entry on the index, the real one.
if admin.site.is_registered(DjangoGroup):
    admin.site.unregister(DjangoGroup)

# --- roles ------------------------------------------------------------------------------


@admin.register(Role)
class RoleAdmin(AuditedModelAdmin):
    """Roles 1-5 carry Unleash's fixed ids, which clients send: they cannot be renamed, retyped
    or deleted."""

    audit_type = "role"
    formfield_overrides = {models.JSONField: {"form_class": LinesField}}

    list_display = ("id", "name", "type", "permission_list", "description")
    list_filter = ("type",)
    search_fields = ("name",)
    fields = ("id", "name", "type", "description", "permissions", "created_at")

    @admin.display(description="permissions")
    def permission_list(self, role: Role) -> str:
        return ", ".join(role.permissions) or "-"

    def get_readonly_fields(self, request: HttpRequest, obj: Role | None = None):
        if obj is not None and obj.pk <= Role.MEMBER:
            return ("id", "name", "type", "created_at")
        return ("id", "created_at")

    # A role's type decides whether its holders count as project members, and deleting a
    # role deletes its assignments (see `AuditedAdminMixin.changes_members`).
    changes_members = True

    def has_delete_permission(self, request: HttpRequest, obj: Role | None = None) -> bool:
        if obj is not None and obj.pk <= Role.MEMBER:
            return False
        return super().has_delete_permission(request, obj)


# --- API tokens -------------------------------------------------------------------------


class ApiTokenAddForm(forms.ModelForm):
    """What a new token reaches. The secret is generated, shown once, and never stored."""

    class Meta:
        model = ApiToken
        fields = ("name", "type", "project", "environment", "user", "expires_at")
        help_texts = {
            "project": 'Client and frontend tokens: comma-separated project ids, or "*" for all.',
            "environment": "Client and frontend tokens: the environment, e.g. development.",
            "user": "Personal tokens: the user (or service account) the token acts as.",
            "expires_at": "Empty: never expires.",
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["user"].queryset = User.objects.exclude(account_type=AccountType.SYSTEM)
        self.fields["environment"].initial = "development"

    def clean(self) -> dict:
        data = super().clean()
        token_type = data.get("type")
        if token_type in SCOPED_TYPES:
            projects = [p.strip() for p in (data.get("project") or "*").split(",") if p.strip()]
            projects = ["*"] if not projects or "*" in projects else projects
            missing = unknown_projects(projects)
            if missing:
                self.add_error("project", f"Unknown project(s): {', '.join(missing)}")
            data["project"] = ",".join(projects)
            if not environment_exists(data.get("environment") or ""):
                self.add_error("environment", "Unknown environment.")
        else:
            data["project"], data["environment"] = "*", "*"
        if token_type == TokenType.PERSONAL and data.get("user") is None:
            self.add_error("user", "A personal token needs the user it acts as.")
        if token_type != TokenType.PERSONAL:
            data["user"] = None
        expires_at = data.get("expires_at")
        if expires_at is not None and expires_at <= timezone.now():
            self.add_error("expires_at", "Must be in the future.")
        return data


class RevokedFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("usable", "Usable"), ("revoked", "Revoked"), ("expired", "Expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> QuerySet[ApiToken]:
        now = timezone.now()
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        if self.value() == "usable":
            return queryset.filter(revoked_at__isnull=True).exclude(expires_at__lte=now)
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(AuditedModelAdmin):
    """API tokens. Only a digest is stored, and the admin never shows it; a new token's secret
    is shown once, on the page the add form redirects to."""

    audit_type = "api-token"

    list_display = (
        "name",
        "type",
        "shown_prefix",
        "project",
        "environment",
        "user",
        "expires_at",
        "revoked_at",
        "last_used_at",
        "created_at",
    )
    list_filter = ("type", RevokedFilter)
    list_select_related = ("user",)
    search_fields = ("name", "prefix", "user__username", "user__email")
    raw_id_fields = ("user",)
    actions = ["revoke"]
    readonly_fields = (
        "type",
        "shown_prefix",
        "project",
        "environment",
        "user",
        "created_at",
        "created_by",
        "last_used_at",
    )

    @admin.display(description="token")
    def shown_prefix(self, token: ApiToken) -> str:
        # Enough to recognise a token by; the secret part is not known here.
        return f"{token.prefix}.…" if token.type != TokenType.PERSONAL else "user:…"

    def get_form(self, request: HttpRequest, obj: ApiToken | None = None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None):
        if obj is None:
            return list(ApiTokenAddForm.Meta.fields)
        return [
            "name",
            "type",
            "shown_prefix",
            "project",
            "environment",
            "user",
            "expires_at",
            "revoked_at",
            "created_at",
            "created_by",
            "last_used_at",
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None):
        return () if obj is None else self.readonly_fields

    def audit_data(self, obj: ApiToken) -> dict[str, Any]:
        # The API's api-token-created data; changes in the admin can also revoke or rename.
        return {**token_event_data(obj), "revokedAt": event_time(obj.revoked_at)}

    def audit_added(self, request: HttpRequest, obj: ApiToken) -> None:
        # Exactly what POST /api/admin/api-tokens records.
        record_event("api-token-created", actor=request.user, data=token_event_data(obj))

    def save_model(self, request: HttpRequest, obj: ApiToken, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        obj.created_by = request.user.audit_name
        # Kept on the request only, for response_add to hand over once; never stored.
        request._issued_token_plaintext = assign_secret(obj)
        obj.save()

    def get_urls(self):
        created = self.admin_site.admin_view(self.created_view)
        return [
            path("<int:token_id>/created/", created, name="flagadmin_apitoken_created"),
            *super().get_urls(),
        ]

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue=None):
        plaintext = getattr(request, "_issued_token_plaintext", None)
        if plaintext is None:
            return super().response_add(request, obj, post_url_continue)
        # POST-redirect-GET: the secret rides in the session to the next page, which takes it
        # out; reloading that page creates nothing and shows no secret. Sessions are database
        # rows: it rides encrypted, so no table ever holds a token's secret in clear.
        request.session[_issued_session_key(obj.pk)] = crypto.encrypt(
            plaintext, purpose=_ISSUED_TOKEN_PURPOSE
        )
        return HttpResponseRedirect(reverse("admin:flagadmin_apitoken_created", args=[obj.pk]))

    def created_view(self, request: HttpRequest, token_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        token = get_object_or_404(ApiToken, pk=token_id)
        sealed = request.session.pop(_issued_session_key(token.pk), None)
        plaintext = crypto.decrypt(sealed, purpose=_ISSUED_TOKEN_PURPOSE) if sealed else None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "token": token,
            "plaintext": plaintext,
            "title": "Copy your new API token" if plaintext else "API token created",
        }
        response = TemplateResponse(request, "admin/flagadmin/apitoken/created.html", context)
        # The page may hold a secret: no browser or proxy may keep it.
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        now = timezone.now()
        count = 0
        for token in queryset.filter(revoked_at__isnull=True).order_by("id"):
            before = self.audit_data(token)
            token.revoked_at = now
            token.save(update_fields=["revoked_at"])
            self.audit_changed(request, token, before)
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


# The key that seals a new token's secret on its way through the session (flagadmin.core.crypto).
_ISSUED_TOKEN_PURPOSE = b"flagadmin.admin.issued-api-token.v1"


def _issued_session_key(token_id: int) -> str:
    return f"flagadmin.issued_token.{token_id}"


# --- audit events -----------------------------------------------------------------------


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """The audit log, read-only: events are written only by the changes they describe."""

    list_display = (
        "created_at",
        "type",
        "created_by",
        "project",
        "feature_name",
        "environment",
    )
    list_filter = ("type", "project")
    search_fields = ("feature_name",)
    date_hierarchy = "created_at"
    show_full_result_count = False
    fields = (
        "type",
        "created_at",
        "created_by",
        "created_by_user_id",
        "token",
        "project",
        "feature_name",
        "environment",
        "data",
        "pre_data",
        "tags",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False
