"""Django admin of projects (flag counts, members and health in the list; members and
environments inline) and of environments."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib import admin
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils import timezone

from flagadmin.admin_audit import AuditedModelAdmin, json_safe
from flagadmin.models import Role
from projects.models import Environment, Project, ProjectEnvironment, ProjectRoleAssignment
from projects.queries import POTENTIALLY_STALE_AFTER, PROJECT_ROLE_TYPES, health


def _count(queryset: QuerySet) -> Coalesce:
    """COUNT(*) of a correlated queryset as a subquery (0 when it has no rows)."""
    counted = queryset.order_by().values("project").annotate(total=Count("pk")).values("total")[:1]
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def annotate_figures(queryset: QuerySet[Project]) -> QuerySet[Project]:
    """Flag counts and member count of each project, computed in the list's own query (one
    correlated subquery per figure, as the API's list), never one query per row."""
    feature = apps.get_model("features", "Feature")  # this app must not import `features`
    active = feature.objects.filter(project=OuterRef("pk"), archived_at__isnull=True)
    now = timezone.now()
    old = Q()
    for kind, lifetime in POTENTIALLY_STALE_AFTER.items():
        old |= Q(type=kind, created_at__lt=now - lifetime)
    members = (
        ProjectRoleAssignment.objects.filter(
            project=OuterRef("pk"), role__type__in=PROJECT_ROLE_TYPES
        )
        .order_by()
        .values("project")
        .annotate(total=Count(Coalesce("group__memberships__user_id", "user_id"), distinct=True))
        .values("total")[:1]
    )
    return queryset.annotate(
        feature_count=_count(active),
        stale_count=_count(active.filter(stale=True)),
        potentially_stale_count=_count(active.filter(old, stale=False)),
        member_count=Coalesce(Subquery(members, output_field=IntegerField()), Value(0)),
    )


class ArchivedFilter(admin.SimpleListFilter):
    title = "archived"
    parameter_name = "archived"

    def lookups(self, request, model_admin):
        return [("no", "Active"), ("yes", "Archived")]

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(archived_at__isnull=self.value() == "no")
        return queryset


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

    def get_readonly_fields(self, request: HttpRequest, obj: Project | None = None):
        # The id is the project's key in URLs and tokens: set once, at creation.
        return [*self.readonly_fields, "id"] if obj is not None else self.readonly_fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        return annotate_figures(super().get_queryset(request))

    @admin.display(description="flags", ordering="feature_count")
    def feature_count(self, project: Project) -> int:
        return project.feature_count

    @admin.display(description="members", ordering="member_count")
    def member_count(self, project: Project) -> int:
        return project.member_count

    @admin.display(description="health")
    def health(self, project: Project) -> str:
        value = health(project.feature_count, project.stale_count, project.potentially_stale_count)
        return f"{value}%"

    @admin.display(description="archived", boolean=True, ordering="archived_at")
    def archived(self, project: Project) -> bool:
        return project.archived_at is not None


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
