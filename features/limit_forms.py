"""The Django admin's forms for strategies and segments, holding the rules of `features.limits`
as the API holds them: the admin's strategy and segment pages write those rows directly."""

from __future__ import annotations

from typing import Any

from django import forms

from features.limits import (
    check_constraints,
    check_segment_count,
    segment_values_problem,
    strategy_segments_problem,
)
from features.models import FeatureStrategy, Segment
from features.segment_services import check_used_only_in
from features.strategy_services import check_room_for_strategy
from flagadmin.core.errors import DomainError, LimitExceededError


class FeatureStrategyLimitsForm(forms.ModelForm):
    """A strategy within Unleash's limits. The admin validates the form inside the transaction
    that saves it: the flag environment a strategy joins is locked until the commit
    (`check_room_for_strategy`), so two pages cannot both take the last place."""

    class Meta:
        model = FeatureStrategy
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

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        adding = self.instance._state.adding
        # Before construct_instance: the instance still holds what is stored.
        existing = [] if adding else self.instance.constraints
        if "constraints" in cleaned:
            try:
                check_constraints(cleaned["constraints"] or [], existing=existing or [])
            except LimitExceededError as error:
                self.add_error("constraints", error.message)
        target = cleaned.get("feature_environment")
        if target is not None and (adding or target.pk != self.instance.feature_environment_id):
            try:
                check_room_for_strategy(target)
            except LimitExceededError as error:
                self.add_error("feature_environment", error.message)
        return cleaned


class StrategySegmentsFormSet(forms.BaseInlineFormSet):
    """A strategy's segments (the strategy page's inline), at most Unleash's limit."""

    def clean(self) -> None:
        super().clean()
        kept = [
            form.cleaned_data["segment"].pk
            for form in self.forms
            if form.cleaned_data.get("segment") is not None
            and not (self.can_delete and self._should_delete_form(form))
        ]
        if problem := strategy_segments_problem(kept):
            raise forms.ValidationError(problem)


class SegmentLimitsForm(forms.ModelForm):
    """A segment within Unleash's limit of values, summed over its constraints."""

    class Meta:
        model = Segment
        fields = ["name", "description", "project", "constraints", "created_by"]

    def clean_constraints(self) -> Any:
        constraints = self.cleaned_data["constraints"]
        if problem := segment_values_problem(constraints):
            raise forms.ValidationError(problem)
        return constraints

    def clean(self) -> dict[str, Any]:
        """The API's rules (`features.segment_services`): the limit of segments when one is
        added, and a project only when no other project's strategies use the segment."""
        cleaned = super().clean()
        try:
            if self.instance._state.adding:
                check_segment_count(Segment.objects.count())
            elif cleaned.get("project") is not None:
                check_used_only_in(self.instance, cleaned["project"].pk)
        except DomainError as error:
            raise forms.ValidationError(error.message) from None
        return cleaned
