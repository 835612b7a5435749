"""Django admin of the core: users, roles, API tokens (secret shown once) and the audit log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Group as DjangoGroup
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from flagadmin.core import crypto
from flagadmin.core.actors import actor_label, recorded_actor_label
from flagadmin.core.admin_audit import AuditedModelAdmin
from flagadmin.core.admin_fields import LinesField, refuse_control_characters
from flagadmin.core.audit import (
    GROUP_EVENT_TYPES,
    TOKEN_EVENT_TYPES,
    diff_event_data,
    event_target,
)
from flagadmin.core.models import AccountType, ApiToken, AuditEvent, Role, TokenType, User
from flagadmin.core.services import (
    environment_exists,
    record_token_created,
    token_event_data,
    unknown_projects,
)
from flagadmin.core.times import api_timestamp
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
        "acts_as",
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
        "acts_as",
        "created_at",
        "created_by",
        "last_used_at",
    )

    @admin.display(description="token")
    def shown_prefix(self, token: ApiToken) -> str:
        # Enough to recognise a token by; the secret part is not known here.
        return f"{token.prefix}.…" if token.type != TokenType.PERSONAL else "user:…"

    @admin.display(description="acts as", ordering="user__email")
    def acts_as(self, token: ApiToken) -> str:
        # A personal token's user, under the label the audit log gives them.
        return actor_label(token.user) if token.user_id is not None else "-"

    def get_form(self, request: HttpRequest, obj: ApiToken | None = None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenAddForm
        return super().get_form(request, obj, **kwargs)

    def formfield_for_dbfield(self, db_field: models.Field, request: HttpRequest, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "name":
            field.validators.append(refuse_control_characters)
        return field

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None):
        if obj is None:
            return list(ApiTokenAddForm.Meta.fields)
        return [
            "name",
            "type",
            "shown_prefix",
            "project",
            "environment",
            "acts_as",
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
        return {**token_event_data(obj), "revokedAt": api_timestamp(obj.revoked_at)}

    def audit_added(self, request: HttpRequest, obj: ApiToken) -> None:
        # Exactly what POST /api/admin/api-tokens records.
        record_token_created(obj, actor=request.user)

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


class InputListFilter(admin.ListFilter):
    """A filter typed into a box (an actor, a name, a time) rather than picked from a list: the
    values are too many to list, and each is matched exactly, so an index answers."""

    template = "admin/flagadmin/auditevent/input_filter.html"
    parameter_name = ""
    placeholder = ""

    def __init__(self, request, params, model, model_admin) -> None:
        super().__init__(request, params, model, model_admin)
        if self.parameter_name in params:
            value = params.pop(self.parameter_name)
            value = value[-1] if isinstance(value, list) else value
            if value.strip():
                self.used_parameters[self.parameter_name] = value.strip()

    def value(self) -> str | None:
        return self.used_parameters.get(self.parameter_name)

    def has_output(self) -> bool:
        return True

    def expected_parameters(self) -> list[str]:
        return [self.parameter_name]

    def suggestions(self) -> list[str]:
        return []

    def choices(self, changelist):
        kept = [
            (name, value)
            for name, values in self.request.GET.lists()
            if name not in (self.parameter_name, "p", "e")
            for value in values
        ]
        yield {
            "parameter": self.parameter_name,
            "value": self.value() or "",
            "placeholder": self.placeholder,
            "hidden": kept,
            "suggestions": self.suggestions(),
            "clear_url": changelist.get_query_string(remove=[self.parameter_name]),
        }

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset if value is None else self.filter(request, queryset, value)

    def filter(self, request: HttpRequest, queryset: QuerySet, value: str) -> QuerySet:
        raise NotImplementedError


# How many people and how many tokens the actor box suggests at most.
SUGGESTED = 300


class ActorFilter(InputListFilter):
    """Who: the actor's label as the event recorded it (a person's email else username, a
    token's name, unleash_system_user), suggested from the users and tokens there are."""

    title = "actor"
    parameter_name = "actor"
    placeholder = "email, username or token name"

    def suggestions(self) -> list[str]:
        # A hint, not a list of everyone: the first few hundred of each.
        people = User.objects.exclude(account_type=AccountType.SYSTEM).only("email", "username")
        labels = {actor_label(user) for user in people[:SUGGESTED]}
        tokens = ApiToken.objects.exclude(type=TokenType.PERSONAL)
        labels.update(tokens.values_list("name", flat=True)[:SUGGESTED])
        return sorted(labels)

    def filter(self, request, queryset, value):
        return queryset.filter(created_by=value)


class FlagFilter(InputListFilter):
    title = "flag"
    parameter_name = "feature_name"
    placeholder = "flag name"

    def filter(self, request, queryset, value):
        return queryset.filter(feature_name=value)


class GroupFilter(InputListFilter):
    """A group's events by its name (created, updated, deleted), or by `#id` also the members
    added or removed one by one (those events record the group's id only)."""

    title = "group"
    parameter_name = "group"
    placeholder = "group name or #id"

    def filter(self, request, queryset, value):
        about = models.Q(data__name=value) | models.Q(pre_data__name=value)
        if value.startswith("#") and value[1:].isdigit():
            group_id = int(value[1:])
            about = (
                models.Q(data__id=group_id)
                | models.Q(pre_data__id=group_id)
                | models.Q(data__groupId=group_id)
                | models.Q(pre_data__groupId=group_id)
            )
        return queryset.filter(models.Q(type__in=GROUP_EVENT_TYPES) & about)


class TokenFilter(InputListFilter):
    """An API token's own events (created, updated, revoked, deleted) by its name. What a
    token did is under the actor filter: its name is its label."""

    title = "token"
    parameter_name = "token"
    placeholder = "token name"

    def filter(self, request, queryset, value):
        about = models.Q(data__tokenName=value) | models.Q(pre_data__tokenName=value)
        return queryset.filter(models.Q(type__in=TOKEN_EVENT_TYPES) & about)


# Times typed into the time filters, in UTC, with how long the last unit given lasts (the
# "to" end takes in the whole day, minute or second it names).
_TIME_FORMATS = (
    ("%Y-%m-%dT%H:%M:%S", timedelta(seconds=1)),
    ("%Y-%m-%d %H:%M:%S", timedelta(seconds=1)),
    ("%Y-%m-%dT%H:%M", timedelta(minutes=1)),
    ("%Y-%m-%d %H:%M", timedelta(minutes=1)),
    ("%Y-%m-%d", timedelta(days=1)),
)


def parse_moment(text: str) -> tuple[datetime, timedelta] | None:
    """A time typed into a filter (UTC; `2026-03-01`, `2026-03-01 12:30`, `...:15`, a `T` for
    the space) and the length of what it names; None when it is not one."""
    for layout, length in _TIME_FORMATS:
        try:
            moment = datetime.strptime(text.removesuffix("Z"), layout)
        except ValueError:
            continue
        return moment.replace(tzinfo=UTC), length
    return None


class _TimeFilter(InputListFilter):
    placeholder = "YYYY-MM-DD hh:mm:ss (UTC)"

    def filter(self, request, queryset, value):
        parsed = parse_moment(value)
        if parsed is None:
            messages.error(
                request,
                f"{self.title.capitalize()}: {value!r} is not a time; "
                "write YYYY-MM-DD, YYYY-MM-DD hh:mm or YYYY-MM-DD hh:mm:ss (UTC).",
            )
            return queryset.none()
        moment, length = parsed
        return self.bound(queryset, moment, length)


class FromFilter(_TimeFilter):
    """Events at or after the moment."""

    title = "time from"
    parameter_name = "from"

    def bound(self, queryset, moment, length):
        return queryset.filter(created_at__gte=moment)


class ToFilter(_TimeFilter):
    """Events up to the end of the day, minute or second given."""

    title = "time up to"
    parameter_name = "to"

    def bound(self, queryset, moment, length):
        return queryset.filter(created_at__lt=moment + length)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """The audit log, read-only: events are written only by the changes they describe. It
    answers who changed what: filters by actor, type, target (project, flag, group, token)
    and time, a search, and on each event its data beside its pre-data, key by key."""

    list_display = ("when", "type", "actor", "target", "environment")
    list_filter = (
        ActorFilter,
        "type",
        "project",
        FlagFilter,
        GroupFilter,
        TokenFilter,
        FromFilter,
        ToFilter,
    )
    search_fields = ("feature_name", "created_by", "type", "project")
    search_help_text = "Flag, actor, event type or project (any part of it)."
    show_full_result_count = False
    readonly_fields = ("when", "actor", "target", "changes")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "type",
                    "when",
                    "actor",
                    "created_by_user_id",
                    "token",
                    "target",
                    "project",
                    "feature_name",
                    "environment",
                )
            },
        ),
        ("Changes", {"fields": ("changes",)}),
        ("Recorded JSON", {"classes": ("collapse",), "fields": ("data", "pre_data", "tags")}),
    )

    @admin.display(description="when (UTC)", ordering="created_at")
    def when(self, event: AuditEvent) -> str:
        return timezone.localtime(event.created_at, UTC).strftime("%Y-%m-%d %H:%M:%S")

    @admin.display(description="actor", ordering="created_by")
    def actor(self, event: AuditEvent) -> str:
        label = recorded_actor_label(event)
        url = reverse("admin:flagadmin_auditevent_changelist")
        return format_html('<a href="{}?{}">{}</a>', url, urlencode({"actor": label}), label)

    @admin.display(description="target")
    def target(self, event: AuditEvent) -> str:
        found = event_target(event)
        if found is None:
            return "-"
        parameter = _TARGET_PARAMETERS.get(found.kind)
        if parameter is None:
            return f"{found.kind} {found.name}"
        url = reverse("admin:flagadmin_auditevent_changelist")
        return format_html(
            '{} <a href="{}?{}">{}</a>',
            found.kind,
            url,
            urlencode({parameter: found.name}),
            found.name,
        )

    @admin.display(description="before / after")
    def changes(self, event: AuditEvent) -> str:
        rows = diff_event_data(event.pre_data, event.data)
        return render_to_string(
            "admin/flagadmin/auditevent/diff.html",
            {"rows": rows, "changed": sum(1 for r in rows if r.status != "unchanged")},
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False


# The changelist's filter parameter for each kind of target it links to.
_TARGET_PARAMETERS = {
    "flag": "feature_name",
    "project": "project",
    "group": "group",
    "token": "token",
}
