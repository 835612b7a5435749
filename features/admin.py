"""Django admin of flags (environments, tags, lifecycle and dependencies inline, see
`features.admin_inlines`; the flag's audit events on its page; what it does in each environment
in words, `features.admin_summaries`), tag types, tags, segments, and what SDKs report (usage
counts, instances). Strategies and their editor: `features.admin_strategies`. Projects:
`overview.admin`, beside the read model its list shares with the API.

Creating and archiving go through `features.services`, as the API does: a flag added here gets
its environments, lifecycle stage and `feature-created` event; archiving is an action.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import Exists, OuterRef, Prefetch, QuerySet, Subquery
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from features.admin_inlines import (
    SAVED_THROUGH_SERVICES,
    FeatureDependencyInline,
    FeatureEnvironmentInline,
    FeatureLifecycleStageInline,
    FeatureTagInline,
)
from features.admin_strategies import FeatureStrategyAdmin  # noqa: F401 (registers it)
from features.admin_summaries import environment_summary, strategies_by_environment
from features.limit_forms import SegmentLimitsForm
from features.metadata_services import update_flag_page_metadata
from features.models import (
    ClientInstance,
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureLifecycleStage,
    FeatureTag,
    FeatureUsageBucket,
    Segment,
    Tag,
    TagType,
)
from features.services import (
    archive_feature,
    create_feature,
    delete_archived_feature,
)
from features.strategy_services import set_feature_environment_enabled
from flagadmin.core.actors import actor_label, recorded_actor_label
from flagadmin.core.admin_audit import AuditedModelAdmin
from flagadmin.core.admin_filters import ActiveByDefaultFilter
from flagadmin.core.errors import InvalidOperationError
from flagadmin.core.models import AuditEvent
from projects.models import Environment, Project

# How many of a flag's events its page shows; the link beside them lists all.
RECENT_EVENTS = 20
# The project the add form offers first (seeded by projects' migrations, as Unleash's).
DEFAULT_PROJECT = "default"


def _environment_names() -> list[str]:
    return list(Environment.objects.order_by("sort_order", "name").values_list("name", flat=True))


class EnvironmentStateFilter(admin.SimpleListFilter):
    """Flags enabled (or disabled) in one environment: `?environment=production:on`."""

    title = "environment"
    parameter_name = "environment"

    def lookups(self, request, model_admin):
        return [
            (f"{name}:{state}", f"{label} in {name}")
            for name in model_admin.environments(request)
            for state, label in (("on", "Enabled"), ("off", "Disabled"))
        ]

    def queryset(self, request, queryset):
        if not self.value() or ":" not in self.value():
            return queryset
        name, state = self.value().rsplit(":", 1)
        # EXISTS, not a join: a flag is listed once whatever its other environments.
        return queryset.filter(
            Exists(
                FeatureEnvironment.objects.filter(
                    feature=OuterRef("pk"), environment_id=name, enabled=state == "on"
                )
            )
        )


class FeatureChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, *args: Any, **kwargs: Any) -> QuerySet[Feature]:
        # The list's columns come with the page: two prefetch queries, not two per row.
        return (
            super()
            .get_queryset(request, *args, **kwargs)
            .annotate(
                current_stage=Subquery(
                    FeatureLifecycleStage.objects.filter(feature=OuterRef("pk"))
                    .order_by("-entered_at", "-id")
                    .values("stage")[:1]
                )
            )
            .prefetch_related(
                Prefetch(
                    "environments",
                    queryset=FeatureEnvironment.objects.order_by().only(
                        "feature_id", "environment_id", "enabled"
                    ),
                    to_attr="environment_states",
                ),
                Prefetch(
                    "feature_tags",
                    queryset=FeatureTag.objects.select_related("tag").order_by("id"),
                    to_attr="tag_rows",
                ),
            )
        )

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        # The rollout column: the page's strategies in one more query, summed up per flag.
        flags = list(self.result_list)
        strategies = strategies_by_environment(
            state.pk for flag in flags for state in flag.environment_states
        )
        order = {name: index for index, name in enumerate(self.model_admin.environments(request))}
        for flag in flags:
            states = sorted(flag.environment_states, key=lambda s: order.get(s.environment_id, 0))
            flag.rollout_lines = [
                (
                    state.environment_id,
                    environment_summary(state.enabled, strategies.get(state.pk, []), flag.name),
                )
                for state in states
            ]


def _environment_column(name: str):
    @admin.display(description=name, boolean=True)
    def column(feature: Feature) -> bool | None:
        # None (the "unknown" icon): the flag's project does not use this environment.
        for state in feature.environment_states:
            if state.environment_id == name:
                return state.enabled
        return None

    column.__name__ = f"environment_{name}"
    return column


def _toggle_action(name: str, enabled: bool):
    def action(modeladmin: FeatureAdmin, request: HttpRequest, queryset: QuerySet[Feature]):
        changed = unchanged = skipped = 0
        for feature in queryset.filter(archived_at__isnull=True).order_by("name"):
            try:
                if set_feature_environment_enabled(
                    feature=feature, environment=name, enabled=enabled, actor=request.user
                ):
                    changed += 1
                else:
                    unchanged += 1
            except FeatureEnvironment.DoesNotExist:
                skipped += 1
        skipped += queryset.filter(archived_at__isnull=False).count()
        verb = "Enabled" if enabled else "Disabled"
        text = f"{verb} {changed} flag(s) in {name}"
        if unchanged:
            text += f"; {unchanged} already {'enabled' if enabled else 'disabled'}"
        if skipped:
            text += f"; {skipped} skipped (archived, or {name} not used by the flag's project)"
        modeladmin.message_user(request, text + ".", messages.SUCCESS)

    return action


@admin.register(Feature)
class FeatureAdmin(AuditedModelAdmin):
    # Adding, editing and archiving go through the services, which record their own events;
    # the inlines record theirs in save_formset, deletion in delete_model.
    audit_type = ""
    # The core's flag list template with the rollout column's style.
    change_list_template = "admin/features/feature/flag_change_list.html"
    list_display = [
        "name",
        "project",
        "type",
        "rollout",
        "lifecycle_stage",
        "tag_list",
        "stale",
        "last_seen",
        "creator",
    ]
    list_filter = ["project", "type", "stale", ActiveByDefaultFilter, EnvironmentStateFilter]
    list_select_related = ["project", "created_by"]
    # Tag values too: operators find flags by team or area tag.
    search_fields = ["name", "description", "tags__value"]
    ordering = ["name"]
    show_full_result_count = False
    inlines = [
        FeatureEnvironmentInline,
        FeatureTagInline,
        FeatureLifecycleStageInline,
        FeatureDependencyInline,
    ]
    actions = ["archive_selected"]
    readonly_fields = [
        "created_at",
        "created_by_label",
        "archived_at",
        "last_seen_at",
        "audit_events",
    ]
    fieldsets = [
        (None, {"fields": ["name", "project", "type", "description"]}),
        ("State", {"fields": ["stale", "impression_data", "archived_at", "last_seen_at"]}),
        ("Origin", {"fields": ["created_at", "created_by_label"]}),
        ("Audit log", {"fields": ["audit_events"]}),
    ]

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return FeatureChangeList

    def get_list_display(self, request: HttpRequest) -> list:
        # One enabled/disabled column per environment, after the flag's name, project, type.
        columns = list(super().get_list_display(request))
        environment_columns = [_environment_column(name) for name in self.environments(request)]
        return [*columns[:3], *environment_columns, *columns[3:]]

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        # Hard delete only for an archived flag, from its own page (as Unleash): no bulk delete.
        actions.pop("delete_selected", None)
        for name in self.environments(request):
            for enabled, verb in ((True, "enable"), (False, "disable")):
                key = f"{verb}_in_{name}"
                actions[key] = (
                    _toggle_action(name, enabled),
                    key,
                    f"{verb.title()} selected flags in {name}",
                )
        return actions

    def environments(self, request: HttpRequest) -> list[str]:
        """The environments' names, in order: read once per request (the columns, the actions,
        the filter and the rollout column all need them)."""
        if not hasattr(request, "_flag_environments"):
            request._flag_environments = _environment_names()
        return request._flag_environments

    def get_readonly_fields(self, request: HttpRequest, obj: Feature | None = None):
        # The name is the key other rows point at, and a flag moves projects only through an
        # operation that also moves its strategies: neither is edited in place.
        if obj is not None:
            return [*self.readonly_fields, "name", "project"]
        return self.readonly_fields

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        # New flags go to the default project unless the operator picks another (as Unleash).
        initial = super().get_changeform_initial_data(request)
        if Project.objects.filter(pk=DEFAULT_PROJECT, archived_at__isnull=True).exists():
            initial.setdefault("project", DEFAULT_PROJECT)
        return initial

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        # New flags go to active projects only, as through the API (an archived one is 404).
        if db_field.name == "project":
            kwargs["queryset"] = Project.objects.filter(archived_at__isnull=True)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_inlines(self, request: HttpRequest, obj: Feature | None):
        # A new flag gets its environments and lifecycle stage from the service.
        if obj is None:
            return [FeatureTagInline]
        return self.inlines

    def has_delete_permission(self, request: HttpRequest, obj: Feature | None = None) -> bool:
        # Unleash deletes only archived flags; archive is the normal action. Nor a flag that
        # others depend on (`features.services.refuse_orphaning`).
        if obj is not None and (obj.archived_at is None or obj.dependents.exists()):
            return False
        return super().has_delete_permission(request, obj)

    @admin.display(description="rollout")
    def rollout(self, obj: Feature) -> str:
        # Per environment, what the flag does ("50 % by userId, if country IN NO, SE").
        return (
            format_html_join(
                mark_safe("<br>"),
                '<span class="rollout-line">{}: {}</span>',
                getattr(obj, "rollout_lines", []),
            )
            or "-"
        )

    @admin.display(description="lifecycle", ordering="current_stage")
    def lifecycle_stage(self, obj: Feature) -> str:
        return getattr(obj, "current_stage", None) or "-"

    @admin.display(description="tags")
    def tag_list(self, obj: Feature) -> str:
        # One a line: a tag is not broken across lines in the narrow column.
        tags = getattr(obj, "tag_rows", [])
        return format_html_join(mark_safe("<br>"), "{}", ((row.tag,) for row in tags)) or "-"

    @admin.display(description="last seen", ordering="last_seen_at")
    def last_seen(self, obj: Feature) -> str:
        if obj.last_seen_at is None:
            return "-"
        seen = timezone.localtime(obj.last_seen_at)
        # Date and time each kept whole: the column breaks between them, not at a hyphen.
        return format_html(
            '<span class="nowrap">{}</span> <span class="nowrap">{}</span>',
            seen.strftime("%Y-%m-%d"),
            seen.strftime("%H:%M"),
        )

    @admin.display(description="created by", ordering="created_by")
    def creator(self, obj: Feature) -> str:
        """The admin's one label for the creator (a flag made through a token: "admin token";
        its page names the token, from the flag's feature-created event)."""
        return actor_label(obj.created_by)

    @admin.display(description="created by")
    def created_by_label(self, obj: Feature) -> str:
        created = (
            AuditEvent.objects.filter(feature_name=obj.name, type="feature-created")
            .order_by("-id")
            .first()
        )
        return recorded_actor_label(created) if created else actor_label(obj.created_by)

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
                    recorded_actor_label(event),
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
            # The page's one transaction writes the metadata, then the inlines (save_formset).
            named = {
                value
                for key, value in request.POST.items()
                if key.startswith("dependencies-") and key.endswith("-parent") and value
            }
            update_flag_page_metadata(
                feature=obj,
                parents=named,
                description=obj.description,
                type=obj.type,
                stale=obj.stale,
                impression_data=obj.impression_data,
                actor=request.user,
            )
            return
        created = create_feature(
            project_id=obj.project_id,
            name=obj.name,
            type=obj.type,
            description=obj.description,
            impression_data=obj.impression_data,
            actor=request.user,
        )
        obj.created_at = created.created_at
        obj.created_by_id = created.created_by_id

    def save_formset(self, request: HttpRequest, form, formset, change: bool) -> None:
        """Each inline change goes through the service that records Unleash's event for it."""
        save_rows = SAVED_THROUGH_SERVICES.get(formset.model)
        if save_rows is None:
            super().save_formset(request, form, formset, change)
            return
        # The services write the rows; Django's own change message reads these lists.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for refusal in save_rows(form.instance, formset, actor=request.user) or []:
            self.message_user(request, refusal, messages.ERROR)

    def delete_model(self, request: HttpRequest, obj: Feature) -> None:
        delete_archived_feature(feature=obj, actor=request.user)

    @admin.action(description="Archive selected flags")
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Feature]) -> None:
        flags = list(queryset.filter(archived_at__isnull=True))
        children = set(
            FeatureDependency.objects.filter(child__in=flags).values_list("child_id", flat=True)
        )
        count = 0
        # Children first: archiving one drops its dependencies, so a parent selected with all
        # its children can go too.
        for feature in sorted(flags, key=lambda flag: flag.name not in children):
            try:
                archive_feature(feature=feature, actor=request.user)
            except InvalidOperationError as refused:
                self.message_user(request, f"{feature.name}: {refused.message}", messages.ERROR)
                continue
            count += 1
        self.message_user(request, f"Archived {count} flag(s).", messages.SUCCESS)


@admin.register(TagType)
class TagTypeAdmin(AuditedModelAdmin):
    audit_type = "tag-type"
    list_display = ["name", "description", "icon", "created_at"]
    search_fields = ["name", "description"]
    ordering = ["name"]
    fields = ["name", "description", "icon"]


@admin.register(Tag)
class TagAdmin(AuditedModelAdmin):
    audit_type = "tag"
    list_display = ["value", "type", "created_at"]
    list_filter = ["type"]
    search_fields = ["value"]
    ordering = ["type", "value"]
    fields = ["type", "value"]


@admin.register(Segment)
class SegmentAdmin(AuditedModelAdmin):
    audit_type = "segment"
    form = SegmentLimitsForm  # Unleash's limit of values (`features.limits`)
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
