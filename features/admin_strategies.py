"""The Django admin's strategies: a list with each strategy in words, and the strategy editor
(`features.admin_strategy_forms`) on the add and change pages.

The editor saves as the API's strategy endpoints do: the fields make the API's body, checked by
its serializer, then `add_feature_strategy` or `update_feature_strategy` writes the strategy
and Unleash's `feature-strategy-*` event in one transaction. A refusal of theirs (a limit, a
segment of another project) is shown on the page and nothing is written.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.options import IS_POPUP_VAR
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import router, transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import urlencode

from features.admin_strategy_forms import ONE_VALUE_OPERATORS, TYPE_PARAMETERS, StrategyEditor
from features.admin_summaries import StrategyView, strategy_summary
from features.models import Feature, FeatureEnvironment, FeatureStrategy
from features.strategy_services import (
    add_feature_strategy,
    delete_feature_strategy,
    update_feature_strategy,
)
from flagadmin.core.admin_audit import AuditedModelAdmin
from flagadmin.core.errors import ArchivedError, DomainError


def flag_page(feature_name: str) -> str:
    return reverse("admin:features_feature_change", args=[quote(feature_name)])


def add_strategy_page(feature_name: str, environment: str) -> str:
    url = reverse("admin:features_featurestrategy_add")
    return f"{url}?{urlencode({'flag': feature_name, 'environment': environment})}"


@admin.register(FeatureStrategy)
class FeatureStrategyAdmin(AuditedModelAdmin):
    """Strategies, reached from a flag's environment rows."""

    # The services record Unleash's `feature-strategy-*` events.
    audit_type = ""
    change_form_template = "admin/features/featurestrategy/editor.html"

    list_display = ["id", "flag", "environment", "name", "summary", "disabled", "sort_order"]
    list_select_related = ["feature_environment"]
    list_filter = ["name", "disabled"]
    search_fields = ["feature_environment__feature__name", "title"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[FeatureStrategy]:
        # The summaries name the segments: one query for the page's, not one per row.
        return super().get_queryset(request).prefetch_related("segment_links__segment")

    @admin.display(ordering="feature_environment__feature")
    def flag(self, obj: FeatureStrategy) -> str:
        return obj.feature_environment.feature_id

    @admin.display(ordering="feature_environment__environment")
    def environment(self, obj: FeatureStrategy) -> str:
        return obj.feature_environment.environment_id

    @admin.display(description="what it does")
    def summary(self, obj: FeatureStrategy) -> str:
        return strategy_summary(StrategyView.of(obj), obj.feature_environment.feature_id)

    # --- the editor ------------------------------------------------------------------------

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # One transaction for the page, as Django's own change form.
        with transaction.atomic(using=router.db_for_write(self.model)):
            return self._edit(request, object_id, form_url, extra_context)

    def _edit(
        self,
        request: HttpRequest,
        object_id: str | None,
        form_url: str,
        extra_context: dict[str, Any] | None,
    ) -> HttpResponse:
        add = object_id is None
        strategy = None if add else self.get_object(request, unquote(object_id))
        if not add and strategy is None:
            raise Http404(f"No strategy with id {object_id}")
        if add and not self.has_add_permission(request):
            raise PermissionDenied
        if not add and not self.has_view_or_change_permission(request, strategy):
            raise PermissionDenied
        may_save = (
            self.has_add_permission(request)
            if add
            else self.has_change_permission(request, strategy)
        )
        feature = (
            strategy.feature_environment.feature
            if strategy is not None
            else Feature.objects.filter(
                pk=request.POST.get("flag") or request.GET.get("flag") or ""
            ).first()
        )
        posted = request.method == "POST" and may_save
        editor = StrategyEditor(
            request.POST if posted else None,
            strategy=strategy,
            feature=feature,
            initial=None if strategy is not None else self._initial_from_query(request),
        )
        if posted:
            saved = self._save(request, editor, strategy)
            if saved is not None:
                message = self._change_message(editor, add)
                if add:
                    self.log_addition(request, saved, message)
                    return self.response_add(request, saved)
                self.log_change(request, saved, message)
                return self.response_change(request, saved)
        return self.render_change_form(
            request,
            self._context(request, editor, strategy, feature, object_id, extra_context),
            add=add,
            change=not add,
            obj=strategy,
            form_url=form_url,
        )

    @staticmethod
    def _initial_from_query(request: HttpRequest) -> dict[str, Any]:
        # The flag page's "add a strategy" links name the flag and the environment.
        return {key: request.GET[key] for key in ("flag", "environment") if key in request.GET}

    def _save(
        self, request: HttpRequest, editor: StrategyEditor, strategy: FeatureStrategy | None
    ) -> FeatureStrategy | None:
        """The strategy as saved through the services, or None (the editor says why)."""
        if not editor.is_valid():
            return None
        if strategy is None:
            state = self._flag_environment(editor)
            if state is None:
                return None
        else:
            state = strategy.feature_environment
        feature = state.feature
        if feature.archived_at is not None:
            # As the API: an archived flag's strategies are not changed (its 404).
            editor.form.add_error(None, ArchivedError.default_message)
            return None
        try:
            with transaction.atomic():
                if strategy is None:
                    return add_feature_strategy(
                        feature=feature,
                        environment=state.environment_id,
                        **editor.definition,
                        actor=request.user,
                    )
                return update_feature_strategy(
                    feature=feature,
                    environment=state.environment_id,
                    strategy=strategy,
                    **editor.definition,
                    actor=request.user,
                )
        except DomainError as error:
            editor.refuse(error)
        except DjangoValidationError as error:  # the variants' weights (`fix_variant_weights`)
            editor.variants.problems.extend(error.messages)
        return None

    @staticmethod
    def _flag_environment(editor: StrategyEditor) -> FeatureEnvironment | None:
        data = editor.form.cleaned_data
        feature = Feature.objects.filter(pk=data["flag"]).select_related("project").first()
        if feature is None:
            editor.form.add_error("flag", f"No flag is named {data['flag']}.")
            return None
        state = FeatureEnvironment.objects.filter(
            feature=feature, environment_id=data["environment"]
        ).first()
        if state is None:
            editor.form.add_error(
                "environment",
                f"The flag's project ({feature.project_id}) does not use this environment.",
            )
            return None
        state.feature = feature
        return state

    @staticmethod
    def _change_message(editor: StrategyEditor, add: bool) -> list[dict[str, Any]]:
        if add:
            return [{"added": {}}]
        fields = [str(editor.form.fields[name].label or name) for name in editor.form.changed_data]
        fields += [
            label
            for label, formset in (
                ("constraints", editor.constraints),
                ("variants", editor.variants),
            )
            if formset.has_changed()
        ]
        return [{"changed": {"fields": fields}}] if fields else []

    def _context(
        self,
        request: HttpRequest,
        editor: StrategyEditor,
        strategy: FeatureStrategy | None,
        feature: Feature | None,
        object_id: str | None,
        extra_context: dict[str, Any] | None,
    ) -> dict[str, Any]:
        form = editor.form
        top = ["flag", "environment"] if strategy is None else []
        fieldsets = [
            (None, {"fields": [*top, "name", "title", "disabled", "sort_order"]}),
            (
                "Parameters",
                {
                    "fields": [
                        "rollout",
                        "stickiness",
                        "group_id",
                        "ips",
                        "host_names",
                        "user_ids",
                        "other_parameters",
                    ]
                },
            ),
            ("Segments", {"fields": ["segments"]}),
        ]
        title = "Add strategy" if strategy is None else "Change strategy"
        summary = None
        if strategy is not None:
            summary = strategy_summary(
                StrategyView.of(strategy), strategy.feature_environment.feature_id
            )
        return {
            **self.admin_site.each_context(request),
            "title": title,
            "subtitle": str(strategy) if strategy is not None else None,
            "adminform": helpers.AdminForm(form, fieldsets, {}, model_admin=self),
            "object_id": object_id,
            "original": strategy,
            "is_popup": IS_POPUP_VAR in request.POST or IS_POPUP_VAR in request.GET,
            "to_field": None,
            "media": self.media + form.media,
            "inline_admin_formsets": [],
            "errors": helpers.AdminErrorList(form, editor.formsets),
            "preserved_filters": self.get_preserved_filters(request),
            "editor": editor,
            "editor_formsets": editor.formsets,
            "editor_settings": {
                "typeParameters": {
                    name: [field for _, field in pairs] for name, pairs in TYPE_PARAMETERS.items()
                },
                "oneValueOperators": list(ONE_VALUE_OPERATORS),
            },
            "feature": feature,
            "environment": strategy.feature_environment.environment_id if strategy else None,
            "summary": summary,
            **(extra_context or {}),
        }

    def response_add(
        self, request: HttpRequest, obj: FeatureStrategy, post_url_continue: str | None = None
    ) -> HttpResponse:
        response = super().response_add(request, obj, post_url_continue)
        if "_addanother" in request.POST and response.status_code == 302:
            # Another strategy for the same flag and environment.
            state = obj.feature_environment
            response["Location"] = add_strategy_page(state.feature_id, state.environment_id)
        return response

    def response_post_save_add(self, request: HttpRequest, obj: FeatureStrategy) -> HttpResponse:
        # Back to the flag, whose page shows the strategy in words.
        return HttpResponseRedirect(flag_page(obj.feature_environment.feature_id))

    def response_post_save_change(self, request: HttpRequest, obj: FeatureStrategy) -> HttpResponse:
        return HttpResponseRedirect(flag_page(obj.feature_environment.feature_id))

    def has_delete_permission(
        self, request: HttpRequest, obj: FeatureStrategy | None = None
    ) -> bool:
        # As the API (its 404): an archived flag's strategies stay as they were archived.
        if obj is not None and obj.feature_environment.feature.archived_at is not None:
            return False
        return super().has_delete_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: FeatureStrategy) -> None:
        state = obj.feature_environment
        delete_feature_strategy(
            feature=state.feature,
            environment=state.environment_id,
            strategy=obj,
            actor=request.user,
        )

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[FeatureStrategy]) -> None:
        for strategy in queryset.select_related("feature_environment__feature"):
            self.delete_model(request, strategy)
