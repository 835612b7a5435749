"""The inlines of the flag's admin page, and how the flag page's inline changes are
saved: each row a flag's page changes goes through the service that records Unleash's event for
it (as the API would), never a plain formset save."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from features.admin_strategies import add_strategy_page
from features.admin_summaries import (
    STRATEGY_ORDER,
    StrategyView,
    environment_summary,
    strategy_summary,
)
from features.dependency_services import (
    dependency_problem,
    remove_feature_dependency,
    set_feature_dependency,
)
from features.models import (
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureLifecycleStage,
    FeatureStrategy,
    FeatureTag,
    Tag,
)
from features.services import set_feature_environment_variants, tag_feature, untag_feature
from features.strategy_services import set_feature_environment_enabled
from flagadmin.core.actors import Actor
from flagadmin.core.admin_audit import json_safe
from flagadmin.core.admin_fields import LinesField
from flagadmin.core.errors import InvalidOperationError, NotFoundError


class FeatureEnvironmentInline(admin.TabularInline):
    """A flag has one row per environment of its project: toggled and given variants here,
    neither added nor removed (that follows the project's environments). Each row says what
    the flag does there and lists its strategies, each a link to the strategy editor."""

    model = FeatureEnvironment
    extra = 0
    fields = ["environment", "enabled", "rollout", "strategies_link", "variants", "last_seen_at"]
    readonly_fields = ["environment", "rollout", "strategies_link", "last_seen_at"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Feature | None = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[FeatureEnvironment]:
        strategies = FeatureStrategy.objects.order_by(*STRATEGY_ORDER).prefetch_related(
            "segment_links__segment"
        )
        return (
            super()
            .get_queryset(request)
            .select_related("environment")
            .prefetch_related(Prefetch("strategies", queryset=strategies, to_attr="strategy_rows"))
        )

    @admin.display(description="rollout")
    def rollout(self, obj: FeatureEnvironment) -> str:
        if obj.pk is None:
            return "-"
        views = [StrategyView.of(strategy) for strategy in obj.strategy_rows]
        return environment_summary(obj.enabled, views, obj.feature_id)

    @admin.display(description="strategies")
    def strategies_link(self, obj: FeatureEnvironment) -> str:
        if obj.pk is None:
            return "-"
        listed = format_html_join(
            "",
            '<a class="strategy-link" href="{}">{}</a><br>',
            (
                (
                    reverse("admin:features_featurestrategy_change", args=[strategy.pk]),
                    strategy_summary(StrategyView.of(strategy), obj.feature_id),
                )
                for strategy in obj.strategy_rows
            ),
        )
        add = add_strategy_page(obj.feature_id, obj.environment_id)
        return format_html('{}<a class="addlink" href="{}">Add a strategy</a>', listed, add)


class FeatureTagInline(admin.TabularInline):
    model = FeatureTag
    extra = 0
    fields = ["tag", "created_at"]
    readonly_fields = ["created_at"]
    autocomplete_fields = ["tag"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[FeatureTag]:
        return super().get_queryset(request).select_related("tag")


class FeatureLifecycleStageInline(admin.TabularInline):
    """Stages are entered by what happens to the flag (created, archived): shown, not edited."""

    model = FeatureLifecycleStage
    extra = 0
    fields = ["stage", "entered_at"]
    readonly_fields = ["stage", "entered_at"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Feature | None = None) -> bool:
        return False


class FeatureDependencyForm(forms.ModelForm):
    """A parent as Unleash allows one (`features.dependency_services.dependency_problem`)."""

    class Meta:
        model = FeatureDependency
        fields = ["parent", "enabled", "variants"]

    def clean_parent(self) -> Feature:
        parent = self.cleaned_data["parent"]
        child = self.instance.child
        problem = dependency_problem(
            child_name=child.name, parent_name=parent.name, project_id=child.project_id
        )
        if problem is not None:
            raise forms.ValidationError(problem.message)
        return parent


class FeatureDependencyInline(admin.TabularInline):
    """The flag's parents: it is on only when they are."""

    model = FeatureDependency
    form = FeatureDependencyForm
    fk_name = "child"
    extra = 0
    fields = ["parent", "enabled", "variants"]
    autocomplete_fields = ["parent"]
    # The parent's variant names: a list of strings.
    formfield_overrides = {models.JSONField: {"form_class": LinesField}}
    verbose_name = "parent dependency"
    verbose_name_plural = "parent dependencies"


# --- saving the flag page's inlines through the services --------------------------------------


def save_environment_rows(feature: Feature, formset: Any, *, actor: Actor) -> None:
    """Variants and on/off of the flag's environment rows that changed."""
    for row in formset.forms:
        if row.instance.pk is None or not row.has_changed():
            continue
        environment = row.instance.environment_id
        if "variants" in row.changed_data:
            set_feature_environment_variants(
                feature=feature,
                environment=environment,
                variants=json_safe(row.cleaned_data["variants"]),
                actor=actor,
            )
        if "enabled" in row.changed_data:
            set_feature_environment_enabled(
                feature=feature,
                environment=environment,
                enabled=row.cleaned_data["enabled"],
                actor=actor,
            )


def save_tag_rows(feature: Feature, formset: Any, *, actor: Actor) -> None:
    """Tags removed, added, or replaced by another (an untag, then a tag)."""
    for row in formset.forms:
        old_tag = row.initial.get("tag")
        if row in formset.deleted_forms:
            if row.instance.pk is not None:
                untag_feature(feature=feature, tag=Tag.objects.get(pk=old_tag), actor=actor)
            continue
        if not row.has_changed() or "tag" not in row.changed_data:
            continue
        if old_tag is not None:
            untag_feature(feature=feature, tag=Tag.objects.get(pk=old_tag), actor=actor)
        tag_feature(feature=feature, tag=row.cleaned_data["tag"], actor=actor)


def save_dependency_rows(feature: Feature, formset: Any, *, actor: Actor) -> list[str]:
    """Parents removed, added, changed, or replaced by another (a removal, then a set). Returns
    what was refused (a parent archived since the form was checked), for the page to say."""
    refused = []
    for row in formset.forms:
        old_parent = row.initial.get("parent")
        if row in formset.deleted_forms or (
            old_parent is not None and "parent" in row.changed_data
        ):
            if row.instance.pk is not None:
                remove_feature_dependency(
                    child=feature, parent=Feature.objects.get(pk=old_parent), actor=actor
                )
            if row in formset.deleted_forms:
                continue
        if not row.has_changed():
            continue
        try:
            set_feature_dependency(
                child=feature,
                parent=row.cleaned_data["parent"],
                enabled=row.cleaned_data["enabled"],
                variants=json_safe(row.cleaned_data["variants"]),
                actor=actor,
            )
        except (InvalidOperationError, NotFoundError) as error:
            refused.append(f"Parent {row.cleaned_data['parent'].name}: {error.message}")
    return refused


# The inline models whose rows the services write (the others are read-only or saved as usual).
# Each returns None, or what it refused (messages for the page).
SAVED_THROUGH_SERVICES: dict[type[models.Model], Callable[..., list[str] | None]] = {
    FeatureEnvironment: save_environment_rows,
    FeatureTag: save_tag_rows,
    FeatureDependency: save_dependency_rows,
}
