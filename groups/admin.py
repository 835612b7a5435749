"""Django admin of user groups (members inline, SSO mappings, root role, member count), and the
groups of each user on the core's user admin."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from flagadmin.core.admin_audit import AuditedModelAdmin
from flagadmin.core.admin_fields import LinesField
from flagadmin.core.locks import members_write
from flagadmin.core.models import User
from groups.models import Group, GroupMembership
from groups.services import group_snapshot, record_member_added, record_member_removed


def save_memberships(request: HttpRequest, formset, *, record_each: bool) -> None:
    """Memberships added in the admin were added by hand, by the signed-in admin. From a
    user's page each one records `group-user-added` / `group-user-removed` (as SAML syncing
    does); from a group's page the group's own `group-updated` lists its members."""
    memberships = formset.save(commit=False)
    # A write of members (the page's own, `changes_members`): the groups and people of the
    # memberships saved are held until the commit.
    with members_write() as members:
        members.hold(Group, [membership.group_id for membership in memberships])
        members.hold(User, [membership.user_id for membership in memberships])
        for membership in memberships:
            added = membership.pk is None
            if added:
                membership.created_by = request.user.audit_name
            membership.save()
            if added and record_each:
                record_member_added(membership.group_id, membership.user_id, actor=request.user)
        for removed in formset.deleted_objects:
            group_id, user_id = removed.group_id, removed.user_id
            removed.delete()
            if record_each:
                record_member_removed(group_id, user_id, actor=request.user)
        formset.save_m2m()


class GroupForm(forms.ModelForm):
    mappings_sso = LinesField(
        required=False,
        label="SSO group mappings",
        help_text="Group names as the identity provider sends them, one per line.",
    )

    class Meta:
        model = Group
        fields = ["name", "description", "mappings_sso", "root_role"]

    def clean_description(self) -> str | None:
        # Empty is "no description" (NULL, as the API stores it), not a change to "".
        return self.cleaned_data["description"] or None


class GroupMembershipInline(admin.TabularInline):
    model = GroupMembership
    extra = 0
    fields = ["user", "joined_at", "created_by", "added_by_sso"]
    readonly_fields = ["joined_at", "created_by", "added_by_sso"]
    raw_id_fields = ["user"]
    verbose_name = "member"
    verbose_name_plural = "members"

    def get_queryset(self, request: HttpRequest) -> QuerySet[GroupMembership]:
        return super().get_queryset(request).select_related("user")


class MemberCountFilter(admin.SimpleListFilter):
    title = "members"
    parameter_name = "members"

    def lookups(self, request, model_admin):
        return [("none", "No members"), ("some", "With members")]

    def queryset(self, request, queryset):
        if self.value() == "none":
            return queryset.filter(user_count=0)
        if self.value() == "some":
            return queryset.filter(user_count__gt=0)
        return queryset


@admin.register(Group)
class GroupAdmin(AuditedModelAdmin):
    audit_type = "group"
    form = GroupForm
    list_display = ["name", "root_role", "user_count", "sso_mappings", "scim_id", "created_at"]
    list_select_related = ["root_role"]
    list_filter = ["root_role", MemberCountFilter]
    search_fields = ["name", "description"]
    ordering = ["name"]
    fields = [
        "name",
        "description",
        "mappings_sso",
        "root_role",
        "scim_id",
        "created_by",
        "created_at",
    ]
    # The SCIM id is written by the identity provider's provisioning, not by hand.
    readonly_fields = ["scim_id", "created_by", "created_at"]
    inlines = [GroupMembershipInline]
    changes_members = True

    def audit_data(self, obj: Group) -> dict[str, Any]:
        # What PUT /api/admin/groups/:id records, members included.
        return group_snapshot(obj, list(obj.memberships.values_list("user_id", flat=True)))

    @admin.display(description="SSO group mappings")
    def sso_mappings(self, group: Group) -> str:
        return ", ".join(group.mappings_sso) or "-"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Group]:
        # The member count comes from the list's own query, not one query per row.
        return super().get_queryset(request).annotate(user_count=Count("memberships"))

    @admin.display(description="users", ordering="user_count")
    def user_count(self, group: Group) -> int:
        return group.user_count

    def save_model(self, request: HttpRequest, obj: Group, form, change: bool) -> None:
        if not change and not obj.created_by:
            obj.created_by = request.user.audit_name
        super().save_model(request, obj, form, change)

    def save_formset(self, request: HttpRequest, form, formset, change: bool) -> None:
        save_memberships(request, formset, record_each=False)


# --- the groups of a user ------------------------------------------------------------------


class UserGroupMembershipInline(admin.TabularInline):
    model = GroupMembership
    fk_name = "user"
    extra = 0
    fields = ["group", "joined_at", "created_by", "added_by_sso"]
    readonly_fields = ["joined_at", "created_by", "added_by_sso"]
    verbose_name = "group"
    verbose_name_plural = "groups"

    def get_queryset(self, request: HttpRequest) -> QuerySet[GroupMembership]:
        return super().get_queryset(request).select_related("group")
