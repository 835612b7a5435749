"""Django admin of flags (environments, tags, lifecycle and dependencies inline, the flag's audit
events on its page), tag types, tags, segments, strategies, and what SDKs report (usage counts,
instances).

Creating and archiving go through `features.services`, as the API does: a flag added here gets
its environments, lifecycle stage and `feature-created` event; archiving is an action.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from features.models import (
    ClientInstance,
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureLifecycleStage,
    FeatureStrategy,
    FeatureStrategySegment,
    FeatureTag,
    FeatureUsageBucket,
    Segment,
    Tag,
    TagType,
)
from features.services import archive_feature, create_feature, update_feature_metadata
from flagadmin.models import AuditEvent

# How many of a flag's events its page shows; the link beside them lists all.
RECENT_EVENTS = 20


class ArchivedFilter(admin.SimpleListFilter):
    title = "archived"
    parameter_name = "archived"

    def lookups(self, request, model_admin):
        return [("no", "Active"), ("yes", "Archived")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(archived_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(archived_at__isnull=True)
        return queryset


class FeatureEnvironmentInline(admin.TabularInline):
    model = FeatureEnvironment
    extra = 0
    fields = ["environment", "enabled", "variants", "last_seen_at", "strategies_link"]
    readonly_fields = ["last_seen_at", "strategies_link"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[FeatureEnvironment]:
        return super().get_queryset(request).select_related("environment")

    @admin.display(description="strategies")
    def strategies_link(self, obj: FeatureEnvironment) -> str:
        if obj.pk is None:
            return "-"
        url = reverse("admin:features_featurestrategy_changelist")
        query = urlencode({"feature_environment__id__exact": obj.pk})
        return format_html('<a href="{}?{}">strategies</a>', url, query)


class FeatureTagInline(admin.TabularInline):
    model = FeatureTag
    extra = 0
    fields = ["tag", "created_at"]
    readonly_fields = ["created_at"]
    autocomplete_fields = ["tag"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[FeatureTag]:
        return super().get_queryset(request).select_related("tag")


class FeatureLifecycleStageInline(admin.TabularInline):
    model = FeatureLifecycleStage
    extra = 0
    fields = ["stage", "entered_at"]


class FeatureDependencyInline(admin.TabularInline):
    """The flag's parents: it is on only when they are."""

    model = FeatureDependency
    fk_name = "child"
    extra = 0
    fields = ["parent", "enabled", "variants"]
    autocomplete_fields = ["parent"]
    verbose_name = "parent dependency"
    verbose_name_plural = "parent dependencies"


@admin.register(Feature)
class FeatureAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "type", "is_archived", "stale", "created_at", "created_by"]
    list_filter = ["project", "type", ArchivedFilter, "stale"]
    list_select_related = ["project", "created_by"]
    search_fields = ["name"]
    ordering = ["name"]
    show_full_result_count = False
    inlines = [
        FeatureEnvironmentInline,
        FeatureTagInline,
        FeatureLifecycleStageInline,
        FeatureDependencyInline,
    ]
    actions = ["archive_selected"]
    readonly_fields = ["created_at", "created_by", "archived_at", "last_seen_at", "audit_events"]
    fieldsets = [
        (None, {"fields": ["name", "project", "type", "description"]}),
        ("State", {"fields": ["stale", "impression_data", "archived_at", "last_seen_at"]}),
        ("Origin", {"fields": ["created_at", "created_by"]}),
        ("Audit log", {"fields": ["audit_events"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Feature | None = None):
        # The name is the key other rows point at, and a flag moves projects only through an
        # operation that also moves its strategies: neither is edited in place.
        if obj is not None:
            return [*self.readonly_fields, "name", "project"]
        return self.readonly_fields

    def get_inlines(self, request: HttpRequest, obj: Feature | None):
        # A new flag gets its environments and lifecycle stage from the service.
        if obj is None:
            return [FeatureTagInline]
        return self.inlines

    @admin.display(boolean=True, description="archived", ordering="archived_at")
    def is_archived(self, obj: Feature) -> bool:
        return obj.archived_at is not None

    @admin.display(description="events")
    def audit_events(self, obj: Feature) -> str:
        if obj.pk is None:
            return "-"
        events = AuditEvent.objects.filter(feature_name=obj.name).order_by("-created_at", "-id")
        recent = list(events[:RECENT_EVENTS])
        url = reverse("admin:flagadmin_auditevent_changelist")
        query = urlencode({"feature_name": obj.name})
        link = format_html('<a href="{}?{}">All events of this flag</a>', url, query)
        if not recent:
            return format_html("No events yet. {}", link)
        rows = format_html_join(
            "",
            '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    reverse("admin:flagadmin_auditevent_change", args=[event.pk]),
                    event.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    event.type,
                    event.created_by,
                    event.environment or "",
                )
                for event in recent
            ),
        )
        return format_html(
            "<table><thead><tr><th>when</th><th>type</th><th>by</th><th>environment</th>"
            "</tr></thead><tbody>{}</tbody></table>{}",
            rows,
            link,
        )

    def save_model(self, request: HttpRequest, obj: Feature, form, change: bool) -> None:
        if change:
            update_feature_metadata(
                feature=obj,
                description=obj.description,
                type=obj.type,
                stale=obj.stale,
                impression_data=obj.impression_data,
                actor=request.user,
            )
            return
        created = create_feature(
            project=obj.project,
            name=obj.name,
            type=obj.type,
            description=obj.description,
            impression_data=obj.impression_data,
            actor=request.user,
        )
        obj.created_at = created.created_at
        obj.created_by_id = created.created_by_id

    @admin.action(description="Archive selected flags")
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Feature]) -> None:
        count = 0
        for feature in queryset.filter(archived_at__isnull=True):
            archive_feature(feature=feature, actor=request.user)
            count += 1
        self.message_user(request, f"Archived {count} flag(s).", messages.SUCCESS)


@admin.register(TagType)
class TagTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "description", "icon", "created_at"]
    search_fields = ["name", "description"]
    ordering = ["name"]
    fields = ["name", "description", "icon"]


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ["value", "type", "created_at"]
    list_filter = ["type"]
    search_fields = ["value"]
    ordering = ["type", "value"]
    fields = ["type", "value"]


class FeatureStrategySegmentInline(admin.TabularInline):
    model = FeatureStrategySegment
    extra = 0
    fields = ["segment"]


@admin.register(FeatureStrategy)
class FeatureStrategyAdmin(admin.ModelAdmin):
    """Strategies, reached from a flag's environment row."""

    list_display = ["id", "flag", "environment", "name", "title", "disabled", "sort_order"]
    list_select_related = ["feature_environment"]
    list_filter = ["name", "disabled"]
    search_fields = ["feature_environment__feature__name", "title"]
    raw_id_fields = ["feature_environment"]
    inlines = [FeatureStrategySegmentInline]
    fields = [
        "feature_environment",
        "name",
        "title",
        "disabled",
        "sort_order",
        "parameters",
        "constraints",
        "variants",
    ]

    @admin.display(ordering="feature_environment__feature")
    def flag(self, obj: FeatureStrategy) -> str:
        return obj.feature_environment.feature_id

    @admin.display(ordering="feature_environment__environment")
    def environment(self, obj: FeatureStrategy) -> str:
        return obj.feature_environment.environment_id


@admin.register(Segment)
class SegmentAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "project", "created_at"]
    list_filter = ["project"]
    search_fields = ["name"]
    fields = ["name", "description", "project", "constraints", "created_by"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """What SDKs report: shown, never edited by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(FeatureUsageBucket)
class FeatureUsageBucketAdmin(ReadOnlyAdmin):
    """Hourly yes/no counts per flag, environment and application (`POST /api/client/metrics`)."""

    list_display = ["hour", "feature_name", "environment", "app_name", "yes", "no"]
    list_filter = ["environment"]
    search_fields = ["feature_name", "app_name"]
    date_hierarchy = "hour"


@admin.register(ClientInstance)
class ClientInstanceAdmin(ReadOnlyAdmin):
    """SDK instances that registered (`POST /api/client/register`)."""

    list_display = ["app_name", "instance_id", "environment", "sdk_version", "last_seen_at"]
    list_filter = ["environment"]
    search_fields = ["app_name", "instance_id"]
