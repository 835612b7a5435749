"""The Django admin's form for segments, holding the rules of `features.limits` as the API holds
them: the admin's segment page writes those rows directly. (The strategy editor saves through
the API's services: `features.admin_strategy_forms`.)"""

from __future__ import annotations

from typing import Any

from django import forms

from features.limits import (
    check_segment_count,
    segment_values_problem,
)
from features.models import Segment
from features.segment_services import check_used_only_in
from flagadmin.core.errors import DomainError


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
