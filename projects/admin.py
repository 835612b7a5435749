"""Django admin of environments, and the pieces of the projects' admin that need nothing above
this app (its inlines, its filter). The projects' admin itself shows flag figures, so it is in
`features.admin`, beside the read model it shares with the API."""

from __future__ import annotations

from django.contrib import admin
from django.db import models
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from flagadmin.core.admin_audit import AuditedModelAdmin
from flagadmin.core.admin_fields import require_url_friendly
from flagadmin.core.models import Role
from projects.models import Environment, ProjectEnvironment, ProjectRoleAssignment
from projects.selectors import PROJECT_ROLE_TYPES


class ProjectRoleAssignmentInline(admin.TabularInline):
    """Who holds which project role: a user or a group (exactly one of them) per row."""

    model = ProjectRoleAssignment
    extra = 0
    fields = ["role", "user", "group", "created_at"]
    readonly_fields = ["created_at"]
    raw_id_fields = ["user", "group"]
    verbose_name = "member"
    verbose_name_plural = "members (project roles of users and groups)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ProjectRoleAssignment]:
        return super().get_queryset(request).select_related("role", "user", "group")

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "role":
            # Project roles only: root roles are held through users and groups themselves.
            kwargs["queryset"] = Role.objects.filter(type__in=PROJECT_ROLE_TYPES)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ProjectEnvironmentInline(admin.TabularInline):
    model = ProjectEnvironment
    extra = 0
    verbose_name = "enabled environment"
    verbose_name_plural = "enabled environments (new flags get one entry per environment)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ProjectEnvironment]:
        return super().get_queryset(request).select_related("environment")


@admin.register(Environment)
class EnvironmentAdmin(AuditedModelAdmin):
    audit_type = "environment"
    list_display = ["name", "type", "sort_order", "enabled", "project_count"]
    list_filter = ["type", "enabled"]
    search_fields = ["name"]
    ordering = ["sort_order", "name"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Environment]:
        return super().get_queryset(request).annotate(project_count=Count("project_environments"))

    @admin.display(description="projects", ordering="project_count")
    def project_count(self, environment: Environment) -> int:
        return environment.project_count

    def get_readonly_fields(self, request: HttpRequest, obj: Environment | None = None):
        # The name is the environment's key in flags and tokens: set once, at creation.
        return ["name"] if obj is not None else []

    def formfield_for_dbfield(self, db_field: models.Field, request: HttpRequest, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "name":
            field.validators.append(require_url_friendly)
        return field
