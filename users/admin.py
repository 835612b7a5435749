"""The users' Django admin: people, service accounts and the system users, with their groups."""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib import admin
from django.contrib.auth import admin as auth_admin
from django.contrib.auth import forms as auth_forms
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest

from flagadmin.core.admin_audit import AuditedAdminMixin, json_safe
from flagadmin.core.models import AccountType, User
from groups.admin import UserGroupMembershipInline, save_memberships
from groups.models import GroupMembership
from users.services import user_created_data


class UserCreationForm(auth_admin.AdminUserCreationForm):
    """Username, email and role; the password is optional ("Password-based authentication"
    off), since people usually sign in through SAML."""

    class Meta(auth_admin.AdminUserCreationForm.Meta):
        model = User
        fields = ("username", "email", "name", "root_role")


class UserChangeForm(auth_forms.UserChangeForm):
    class Meta(auth_forms.UserChangeForm.Meta):
        model = User
        fields = (
            "username",
            "password",
            "email",
            "name",
            "image_url",
            "root_role",
            "account_type",
            "is_active",
            "scim_id",
        )


# Accounts nobody signs in with: the system users tokens and the instance act as, and service
# accounts (managed through /api/admin/service-account, acting through their tokens).
READ_ONLY_ACCOUNT_TYPES = (AccountType.SYSTEM, AccountType.SERVICE)


class AccountKindFilter(admin.SimpleListFilter):
    """People by default: the system users and service accounts are not accounts an operator
    edits, and are listed only when asked for."""

    title = "account type"
    parameter_name = "account_type"
    ALL = "all"

    def lookups(self, request, model_admin):
        return [
            (AccountType.SERVICE, "Service accounts"),
            (AccountType.SYSTEM, "System users"),
            (self.ALL, "All accounts"),
        ]

    def choices(self, changelist):
        # "People" stands where Django's "All" would: the default, without a parameter.
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "People",
        }
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == str(lookup),
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[User]) -> QuerySet[User]:
        value = self.value()
        if value == self.ALL:
            return queryset
        if value in READ_ONLY_ACCOUNT_TYPES:
            return queryset.filter(account_type=value)
        return queryset.filter(account_type=AccountType.USER)


@admin.register(User)
class UserAdmin(AuditedAdminMixin, auth_admin.UserAdmin):
    """People, service accounts, and the two system users tokens act as (those are read-only),
    each with their groups."""

    audit_type = "user"

    form = UserChangeForm
    add_form = UserCreationForm
    list_display = (
        "id",
        "username",
        "email",
        "name",
        "root_role",
        "account_type",
        "is_active",
        "seen_at",
        "created_at",
        "group_names",
    )
    list_display_links = ("id", "username")
    list_filter = (AccountKindFilter, "root_role", "is_active")
    list_select_related = ("root_role",)
    search_fields = ("username", "email", "name")
    ordering = ("id",)
    filter_horizontal = ()
    inlines = [UserGroupMembershipInline]
    # Group memberships are edited here: the members' lock first (flagadmin.core.admin_audit).
    changes_members = True
    # The SCIM id is written by the identity provider's provisioning, not by hand.
    readonly_fields = ("login_attempts", "seen_at", "last_login", "created_at", "scim_id")
    fieldsets = (
        (None, {"fields": ("username", "password")}),
        ("Profile", {"fields": ("name", "email", "image_url")}),
        ("Access", {"fields": ("root_role", "account_type", "is_active", "scim_id")}),
        ("Activity", {"fields": ("login_attempts", "seen_at", "last_login", "created_at")}),
    )
    add_fieldsets = (
        (
            None,
            {
                "classes": ("wide",),
                "fields": (
                    "username",
                    "email",
                    "name",
                    "root_role",
                    "usable_password",
                    "password1",
                    "password2",
                ),
            },
        ),
    )

    def audit_data(self, obj: User) -> dict[str, Any]:
        # The API's user-created data, plus what the admin can change (never the password
        # hash: a new password shows as a new passwordVersion).
        return json_safe(
            user_created_data(
                obj,
                accountType=obj.account_type,
                isActive=obj.is_active,
                imageUrl=obj.image_url,
                passwordSet=obj.has_usable_password(),
                passwordVersion=_password_marker(obj),
            )
        )

    def _is_read_only(self, obj: User | None) -> bool:
        return obj is not None and obj.account_type in READ_ONLY_ACCOUNT_TYPES

    def has_change_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        # Also refuses their password page (UserAdmin.user_change_password asks this).
        return not self._is_read_only(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return not self._is_read_only(obj) and super().has_delete_permission(request, obj)

    def get_fieldsets(self, request: HttpRequest, obj: User | None = None):
        fieldsets = super().get_fieldsets(request, obj)
        if not self._is_read_only(obj):
            return fieldsets
        # Nobody signs in as them: no password field, nor its hash shown read-only.
        return [
            (name, {**options, "fields": [f for f in options["fields"] if f != "password"]})
            for name, options in fieldsets
        ]

    def get_inlines(self, request: HttpRequest, obj: User | None = None):
        return [] if self._is_read_only(obj) else super().get_inlines(request, obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        # The groups column reads prefetched memberships: two queries per page, not one per row.
        return (
            super()
            .get_queryset(request)
            .prefetch_related(
                Prefetch(
                    "group_memberships",
                    queryset=GroupMembership.objects.select_related("group").order_by(
                        "group__name"
                    ),
                )
            )
        )

    @admin.display(description="groups")
    def group_names(self, user: User) -> str:
        return ", ".join(m.group.name for m in user.group_memberships.all()) or "-"

    def save_formset(self, request: HttpRequest, form, formset, change: bool) -> None:
        if formset.model is GroupMembership:
            save_memberships(request, formset, record_each=True)
        else:
            super().save_formset(request, form, formset, change)


def _password_marker(user: User) -> str:
    """Changes whenever the password does, without recording anything derived from it
    beyond that fact (the event must not help anyone guess the password)."""
    return hashlib.sha256(f"audit:{user.password}".encode()).hexdigest()[:12]
