"""Django admin of projects: the list shows each project's figures as the API lists them (one
read model, `overview.project_figures`, computed for the page's projects at once); members and
environments are edited inline. Writes are audited like every admin's (`AuditedModelAdmin`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db import models
from django.http import HttpRequest

from flagadmin.core.admin_audit import AuditedModelAdmin, json_safe
from flagadmin.core.admin_fields import refuse_control_characters, require_url_friendly
from flagadmin.core.admin_filters import ArchivedFilter
from flagadmin.core.errors import InvalidOperationError
from flagadmin.core.locks import members_write
from flagadmin.core.models import User
from groups.models import Group
from overview.project_figures import project_figures
from projects.admin import ProjectEnvironmentInline, ProjectRoleAssignmentInline
from projects.models import Project, ProjectRoleAssignment
from projects.services import refuse_archive_with_active_flags


class ProjectChangeList(ChangeList):
    """The page of projects, each with `figures`: the project as the API lists it, computed
    for the page's projects at once by the API's own read model."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        figures = project_figures([project.pk for project in self.result_list])
        for project in self.result_list:
            project.figures = figures[project.pk]


class ProjectArchiveForm(forms.ModelForm):
    """Archiving here follows the API's rule (`projects.services.archive_project`): refused
    while the project has active flags. The admin validates the form inside the transaction
    that saves it, so the flag counts locked by the check are held until the commit."""

    class Meta:
        model = Project
        fields = ["id", "name", "description", "mode", "default_stickiness", "archived_at"]

    def clean_archived_at(self) -> Any:
        archived_at = self.cleaned_data["archived_at"]
        if archived_at is not None and self.instance.pk and self.instance.archived_at is None:
            try:
                refuse_archive_with_active_flags(self.instance)
            except InvalidOperationError as refused:
                raise forms.ValidationError(refused.message) from None
        return archived_at


@admin.register(Project)
class ProjectAdmin(AuditedModelAdmin):
    audit_type = "project"
    list_display = [
        "id",
        "name",
        "mode",
        "feature_count",
        "member_count",
        "health",
        "archived",
        "created_at",
    ]
    list_filter = ["mode", ArchivedFilter]
    search_fields = ["id", "name"]
    fields = [
        "id",
        "name",
        "description",
        "mode",
        "default_stickiness",
        "created_at",
        "updated_at",
        "archived_at",
    ]
    readonly_fields = ["created_at", "updated_at"]
    inlines = [ProjectRoleAssignmentInline, ProjectEnvironmentInline]
    form = ProjectArchiveForm
    changes_members = True  # its roles (see `AuditedAdminMixin.changes_members`)

    def formfield_for_dbfield(self, db_field: models.Field, request: HttpRequest, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "name":
            field.validators.append(refuse_control_characters)
        elif db_field.name == "id":
            field.validators.append(require_url_friendly)
        return field

    def audit_data(self, obj: Project) -> dict[str, Any]:
        # What POST /api/admin/projects records, plus what else the admin edits: archiving,
        # and the members and environments of the inlines.
        environments = obj.project_environments.order_by("environment_id")
        members = obj.role_assignments.order_by("role_id", "user_id", "group_id")
        return json_safe(
            {
                "id": obj.pk,
                "name": obj.name,
                "description": obj.description,
                "mode": obj.mode,
                "defaultStickiness": obj.default_stickiness,
                "environments": list(environments.values_list("environment_id", flat=True)),
                "archivedAt": obj.archived_at,
                "members": [
                    {"role": role, "user": user, "group": group}
                    for role, user, group in members.values_list("role_id", "user_id", "group_id")
                ],
            }
        )

    def audit_scope(self, obj: Project) -> dict[str, Any]:
        return {"project": obj.pk}

    def save_formset(self, request: HttpRequest, form, formset, change: bool) -> None:
        if formset.model is not ProjectRoleAssignment:
            super().save_formset(request, form, formset, change)
            return
        assignments = formset.save(commit=False)
        # A write of members (the page's own, `changes_members`): the groups and people given
        # roles are held until the commit.
        with members_write() as members:
            members.hold(Group, [a.group_id for a in assignments if a.group_id])
            members.hold(User, [a.user_id for a in assignments if a.user_id])
            for assignment in assignments:
                assignment.save()
            for assignment in formset.deleted_objects:
                assignment.delete()
            formset.save_m2m()

    def get_readonly_fields(self, request: HttpRequest, obj: Project | None = None):
        # The id is the project's key in URLs and tokens: set once, at creation.
        return [*self.readonly_fields, "id"] if obj is not None else self.readonly_fields

    def get_changelist(self, request: HttpRequest, **kwargs) -> type[ChangeList]:
        return ProjectChangeList

    @admin.display(description="flags")
    def feature_count(self, project: Project) -> int:
        return project.figures["featureCount"]

    @admin.display(description="members")
    def member_count(self, project: Project) -> int:
        return project.figures["memberCount"]

    @admin.display(description="health")
    def health(self, project: Project) -> str:
        return f"{project.figures['health']}%"

    @admin.display(description="archived", boolean=True, ordering="archived_at")
    def archived(self, project: Project) -> bool:
        return project.archived_at is not None
