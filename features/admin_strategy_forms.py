"""The Django admin's strategy editor: a strategy as form fields rather than JSON, under the API's
rules.

The fields are turned into the body the API's strategy endpoints take (`strategy_body`) and
checked by the API's own serializer (`CreateFeatureStrategySchemaSerializer`), whose refusals
come back on the fields that caused them; the admin then saves through the API's services
(`features.strategy_services`), whose refusals (limits, segments of another project) come back
the same way. Only the pickers are the editor's own: a constraint names a known context field,
and a stickiness one of Unleash's or a context field, as Unleash's UI offers them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from django import forms
from django.db.models import Q
from django.forms.utils import ErrorList

from definitions import selectors as definitions
from features.limits import check_constraints, strategy_segments_problem
from features.models import Feature, FeatureStrategy, Segment
from features.strategy_serializers import CreateFeatureStrategySchemaSerializer
from features.validators import CONSTRAINT_OPERATORS, PAYLOAD_TYPES, SINGLE_VALUE_OPERATORS
from flagadmin.core.errors import UNSET, DomainError, LimitExceededError
from projects.models import Environment

# Unleash's own stickiness values, offered before the context fields.
BUILT_IN_STICKINESS = ("default", "userId", "sessionId", "random")
# Operators that compare against one `value`; the others take a list of `values`.
ONE_VALUE_OPERATORS = (*SINGLE_VALUE_OPERATORS, "REGEX")
# The parameters each built-in type has a field for: the API's key, the form's field.
TYPE_PARAMETERS: dict[str, tuple[tuple[str, str], ...]] = {
    "flexibleRollout": (
        ("rollout", "rollout"),
        ("stickiness", "stickiness"),
        ("groupId", "group_id"),
    ),
    "remoteAddress": (("IPs", "ips"),),
    "applicationHostname": (("hostNames", "host_names"),),
    "userWithId": (("userIds", "user_ids"),),
}
PARAMETER_FIELDS = {key: field for pairs in TYPE_PARAMETERS.values() for key, field in pairs}
# The API's keys and the forms' fields, for the serializer's refusals.
STRATEGY_FIELDS = {
    "name": "name",
    "title": "title",
    "disabled": "disabled",
    "sortOrder": "sort_order",
    "segments": "segments",
}
CONSTRAINT_FIELDS = {
    "contextName": "context_name",
    "operator": "operator",
    "values": "values",
    "value": "value",
    "caseInsensitive": "case_insensitive",
    "inverted": "inverted",
}
VARIANT_FIELDS = {
    "name": "name",
    "weight": "weight",
    "weightType": "weight_type",
    "stickiness": "stickiness",
    "payload": "payload_value",
}
WEIGHT_STEP = Decimal(10)  # the API's weights are tenths of a percent


def _choices(names: Sequence[str], *keep: str) -> list[tuple[str, str]]:
    """Each name once, in order, with `keep` (a stored value no longer offered) after them."""
    return [(name, name) for name in dict.fromkeys([*names, *(k for k in keep if k)])]


def _messages(errors: Any) -> list[str]:
    """Every message in a DRF error tree, flattened."""
    if isinstance(errors, Mapping):
        return [message for value in errors.values() for message in _messages(value)]
    if isinstance(errors, list | tuple):
        return [message for value in errors for message in _messages(value)]
    return [str(errors)]


def _by_index(errors: Any) -> dict[int, Any]:
    """A list field's per-item errors, however DRF nests them (a dict by index, or a list)."""
    if isinstance(errors, Mapping):
        return {int(k): v for k, v in errors.items() if str(k).isdigit()}
    if isinstance(errors, list) and errors and all(isinstance(e, Mapping) for e in errors):
        return {index: e for index, e in enumerate(errors) if e}
    return {}


def _lines(text: str) -> list[str]:
    lines = (line.strip() for line in (text or "").splitlines())
    return [line for line in lines if line]


class EditorFormSet(forms.BaseFormSet):
    """A formset whose rows are items of a JSON list; `problems` are the list's own refusals
    (the serializer's or a service's), shown above its rows."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.problems: list[str] = []

    def non_form_errors(self) -> ErrorList:
        return ErrorList([*super().non_form_errors(), *self.problems], error_class="nonform")

    def kept_forms(self) -> list[forms.Form]:
        """The rows to save, once validated: the stored ones and the new ones filled in, but
        those marked for deletion."""
        return [
            form
            for index, form in enumerate(self.forms)
            if (index < self.initial_form_count() or form.has_changed())
            and not form.cleaned_data.get("DELETE", False)
        ]


class StrategyForm(forms.Form):
    """The strategy itself: its type and parameters, title, state, position and segments."""

    flag = forms.CharField(max_length=255, help_text="The flag's name.")
    environment = forms.ChoiceField(choices=())
    name = forms.ChoiceField(label="Strategy type", choices=())
    title = forms.CharField(required=False, max_length=255)
    disabled = forms.BooleanField(
        label="Paused", required=False, help_text="A paused strategy is left out for SDKs."
    )
    sort_order = forms.IntegerField(
        label="Position",
        required=False,
        help_text="Strategies are tried in this order; empty: after the last one.",
    )
    rollout = forms.IntegerField(
        label="Rollout (%)",
        required=False,
        widget=forms.NumberInput(attrs={"min": 0, "max": 100, "step": 1, "class": "vIntegerField"}),
        help_text="Share of the stickiness' values the flag is on for, 0 to 100.",
    )
    stickiness = forms.ChoiceField(
        choices=(),
        help_text="What puts a context in the rollout: default is userId, else sessionId, "
        "else random.",
    )
    group_id = forms.CharField(
        label="Group id",
        required=False,
        max_length=255,
        help_text="Flags sharing a group id and a rollout are on for the same contexts; "
        "empty: the flag's name.",
    )
    ips = forms.CharField(label="IPs", required=False, help_text="Comma-separated addresses.")
    host_names = forms.CharField(
        label="Host names", required=False, help_text="Comma-separated host names."
    )
    user_ids = forms.CharField(
        label="User ids", required=False, help_text="Comma-separated user ids."
    )
    other_parameters = forms.CharField(
        label="Other parameters",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="For a custom strategy: name=value, one a line.",
    )
    segments = forms.ModelMultipleChoiceField(
        queryset=Segment.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The strategy applies only to contexts in every segment checked.",
    )

    def __init__(
        self,
        *args: Any,
        strategy: FeatureStrategy | None,
        feature: Feature | None,
        stickiness: Sequence[str],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        stored = strategy.name if strategy is not None else ""
        self.fields["name"].choices = _choices(definitions.strategy_names(), stored)
        kept = strategy.parameters.get("stickiness", "") if strategy is not None else ""
        self.fields["stickiness"].choices = _choices(stickiness, kept)
        segments = Segment.objects.order_by("name", "id")
        if feature is not None:
            # A strategy may use global segments and those of its flag's project.
            segments = segments.filter(Q(project__isnull=True) | Q(project_id=feature.project_id))
        self.fields["segments"].queryset = segments
        if strategy is not None:
            # A strategy belongs to its flag environment for good.
            del self.fields["flag"], self.fields["environment"]
        else:
            self.fields["environment"].choices = [
                (name, name)
                for name in Environment.objects.order_by("sort_order", "name").values_list(
                    "name", flat=True
                )
            ]

    def clean_other_parameters(self) -> dict[str, str]:
        parameters = {}
        for line in _lines(self.cleaned_data["other_parameters"]):
            key, equals, value = line.partition("=")
            if not equals or not key.strip():
                raise forms.ValidationError(f"Write each parameter as name=value: {line}")
            parameters[key.strip()] = value.strip()
        return parameters

    def parameters(self) -> dict[str, str]:
        """The parameters for the chosen type: its fields', then the other ones."""
        data = self.cleaned_data
        parameters = {}
        for key, field in TYPE_PARAMETERS.get(data["name"], ()):
            value = data.get(field)
            if value not in (None, ""):
                parameters[key] = str(value)
        return {**parameters, **data.get("other_parameters", {})}


class ConstraintForm(forms.Form):
    """A condition on the context: all of a strategy's constraints must hold."""

    context_name = forms.ChoiceField(label="Context field", choices=())
    operator = forms.ChoiceField(choices=[(op, op) for op in CONSTRAINT_OPERATORS], initial="IN")
    values = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 24}),
        help_text="One a line.",
    )
    value = forms.CharField(required=False, help_text="For a single-value operator.")
    inverted = forms.BooleanField(required=False)
    case_insensitive = forms.BooleanField(label="Case-insensitive", required=False)

    def __init__(self, *args: Any, context_fields: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kept = self.initial.get("context_name", "")
        # A row left empty posts "" and is no constraint (`EditorFormSet.kept_forms`).
        self.fields["context_name"].choices = [("", "---------"), *_choices(context_fields, kept)]

    def body(self) -> dict[str, Any]:
        """The constraint as the API takes it: `value` for one-value operators, else `values`."""
        data = self.cleaned_data
        constraint: dict[str, Any] = {
            "contextName": data["context_name"],
            "operator": data["operator"],
            "caseInsensitive": data["case_insensitive"],
            "inverted": data["inverted"],
        }
        if data["operator"] in ONE_VALUE_OPERATORS:
            constraint["value"] = data["value"].strip()
        else:
            constraint["values"] = _lines(data["values"])
        return constraint


class VariantForm(forms.Form):
    """A variant the strategy hands out to the contexts it is on for."""

    name = forms.CharField(max_length=255)
    weight_type = forms.ChoiceField(
        label="Weight type",
        choices=[("variable", "variable"), ("fix", "fix")],
        initial="variable",
        help_text="variable: an even share of what the fix ones leave.",
    )
    weight = forms.DecimalField(
        label="Weight (%)",
        required=False,
        max_digits=4,
        decimal_places=1,
        help_text="For a fix weight.",
    )
    stickiness = forms.ChoiceField(choices=(), initial="default")
    payload_type = forms.ChoiceField(
        label="Payload type",
        required=False,
        choices=[("", "none"), *((kind, kind) for kind in PAYLOAD_TYPES)],
    )
    payload_value = forms.CharField(
        label="Payload", required=False, widget=forms.Textarea(attrs={"rows": 1, "cols": 24})
    )

    def __init__(self, *args: Any, stickiness: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["stickiness"].choices = _choices(stickiness, self.initial.get("stickiness", ""))

    def body(self) -> dict[str, Any]:
        data = self.cleaned_data
        weight = data["weight"] if data["weight"] is not None else Decimal(0)
        variant: dict[str, Any] = {
            "name": data["name"],
            # Variable weights are computed by the service (Unleash's fixVariantWeights).
            "weight": int(weight * WEIGHT_STEP),
            "weightType": data["weight_type"],
            "stickiness": data["stickiness"],
        }
        if data["payload_type"]:
            variant["payload"] = {"type": data["payload_type"], "value": data["payload_value"]}
        return variant


ConstraintFormSet = forms.formset_factory(
    ConstraintForm, formset=EditorFormSet, extra=1, can_delete=True
)
VariantFormSet = forms.formset_factory(VariantForm, formset=EditorFormSet, extra=1, can_delete=True)


def _initial(strategy: FeatureStrategy | None, feature: Feature | None) -> dict[str, Any]:
    if strategy is None:
        # As Unleash's editor starts a strategy: a flexible rollout of 100 %.
        initial = {"name": "flexibleRollout", "rollout": 100, "stickiness": "default"}
        if feature is not None:
            initial |= {
                "flag": feature.name,
                "group_id": feature.name,
                "stickiness": feature.project.default_stickiness or "default",
            }
        return initial
    parameters = dict(strategy.parameters)
    initial = {
        "name": strategy.name,
        "title": strategy.title,
        "disabled": strategy.disabled,
        "sort_order": strategy.sort_order,
        "segments": [link.segment_id for link in strategy.segment_links.all()],
        "stickiness": "default",
    }
    for key, field in TYPE_PARAMETERS.get(strategy.name, ()):
        if key in parameters:
            initial[field] = parameters.pop(key)
    initial["other_parameters"] = "\n".join(f"{key}={value}" for key, value in parameters.items())
    return initial


def _constraint_initial(constraint: dict[str, Any]) -> dict[str, Any]:
    return {
        "context_name": constraint.get("contextName", ""),
        "operator": constraint.get("operator", "IN"),
        "values": "\n".join(constraint.get("values") or []),
        "value": constraint.get("value", ""),
        "inverted": constraint.get("inverted", False),
        "case_insensitive": constraint.get("caseInsensitive", False),
    }


def _variant_initial(variant: dict[str, Any]) -> dict[str, Any]:
    payload = variant.get("payload") or {}
    return {
        "name": variant.get("name", ""),
        "weight_type": variant.get("weightType", "variable"),
        "weight": Decimal(variant.get("weight", 0)) / WEIGHT_STEP,
        "stickiness": variant.get("stickiness", "default"),
        "payload_type": payload.get("type", ""),
        "payload_value": payload.get("value", ""),
    }


class StrategyEditor:
    """The editor's forms together: the strategy, its constraints and its variants."""

    def __init__(
        self,
        data: Mapping[str, Any] | None,
        *,
        strategy: FeatureStrategy | None = None,
        feature: Feature | None = None,
        initial: Mapping[str, Any] | None = None,
    ) -> None:
        self.strategy = strategy
        # Read once for all the rows (the definitions may come from the database).
        context_fields = definitions.context_field_names()
        stickiness = list(dict.fromkeys([*BUILT_IN_STICKINESS, *context_fields]))
        self.form = StrategyForm(
            data,
            strategy=strategy,
            feature=feature,
            stickiness=stickiness,
            initial={**_initial(strategy, feature), **(initial or {})},
        )
        stored = strategy.constraints if strategy is not None else []
        self.constraints = ConstraintFormSet(
            data,
            prefix="constraints",
            initial=[_constraint_initial(c) for c in stored],
            form_kwargs={"context_fields": context_fields},
        )
        variants = strategy.variants if strategy is not None else []
        self.variants = VariantFormSet(
            data,
            prefix="variants",
            initial=[_variant_initial(v) for v in variants],
            form_kwargs={"stickiness": stickiness},
        )
        self.definition: dict[str, Any] = {}

    @property
    def formsets(self) -> list[EditorFormSet]:
        return [self.constraints, self.variants]

    def is_valid(self) -> bool:
        """The fields, then the API's rules over the body they make; `definition` is then the
        keywords of `add_feature_strategy` / `update_feature_strategy`."""
        if not all([self.form.is_valid(), *(formset.is_valid() for formset in self.formsets)]):
            return False
        serializer = CreateFeatureStrategySchemaSerializer(data=self.body())
        if not serializer.is_valid():
            self._show(serializer.errors)
            return False
        definition = serializer.validated_data
        # Unleash's limits (`features.limits`), shown beside the lists they are about; the
        # service checks them again as it writes.
        try:
            stored = self.strategy.constraints if self.strategy is not None else []
            check_constraints(definition["constraints"], existing=stored)
        except LimitExceededError as error:
            self.constraints.problems.append(error.message)
        if problem := strategy_segments_problem(definition["segments"]):
            self.form.add_error("segments", problem)
        if self.has_errors:
            return False
        self.definition = definition
        return True

    def body(self) -> dict[str, Any]:
        """The request body the API would take for what the form says."""
        data = self.form.cleaned_data
        body: dict[str, Any] = {
            "name": data["name"],
            "title": data["title"] or None,
            "disabled": data["disabled"],
            "parameters": self.form.parameters(),
            "constraints": [form.body() for form in self.constraints.kept_forms()],
            "variants": [form.body() for form in self.variants.kept_forms()],
            "segments": [segment.pk for segment in data["segments"]],
        }
        if data["sort_order"] is not None:
            body["sortOrder"] = data["sort_order"]
        return body

    def refuse(self, error: DomainError) -> None:
        """A service's refusal, shown where its problems point (a field, a row's field, a
        list), else above the form."""
        placed = False
        for problem in error.problems:
            field = problem.field or ()
            message = problem.message
            if problem.predicate and problem.refused is not UNSET:
                refused = problem.refused
                shown = ", ".join(map(str, refused)) if isinstance(refused, list) else refused
                message = f"{message}: {shown}"
            if field[:1] in (("constraints",), ("variants",)):
                formset = self.constraints if field[0] == "constraints" else self.variants
                fields = CONSTRAINT_FIELDS if field[0] == "constraints" else VARIANT_FIELDS
                rows = formset.kept_forms()
                if len(field) > 1 and field[1].isdigit() and int(field[1]) < len(rows):
                    rows[int(field[1])].add_error(
                        fields.get(field[2]) if len(field) > 2 else None, message
                    )
                else:
                    formset.problems.append(message)
            elif field[:1] and (STRATEGY_FIELDS.get(field[0]) or PARAMETER_FIELDS.get(field[0])):
                name = STRATEGY_FIELDS.get(field[0]) or PARAMETER_FIELDS[field[0]]
                self.form.add_error(name, message)
            else:
                continue
            placed = True
        if not placed:
            self.form.add_error(None, error.message or str(error))

    @property
    def has_errors(self) -> bool:
        return bool(
            self.form.errors
            or any(
                formset.non_form_errors() or any(form.errors for form in formset.forms)
                for formset in self.formsets
            )
        )

    def _show(self, errors: Mapping[str, Any]) -> None:
        """The serializer's refusals on the fields and rows they are about."""
        for key, value in errors.items():
            if key == "parameters":
                self._show_parameters(value)
            elif key == "constraints":
                self._show_rows(self.constraints, value, CONSTRAINT_FIELDS)
            elif key == "variants":
                self._show_rows(self.variants, value, VARIANT_FIELDS)
            else:
                field = STRATEGY_FIELDS.get(key)
                for message in _messages(value):
                    self.form.add_error(field, message)

    def _show_parameters(self, errors: Any) -> None:
        if not isinstance(errors, Mapping):
            for message in _messages(errors):
                self.form.add_error("other_parameters", message)
            return
        for key, value in errors.items():
            field = PARAMETER_FIELDS.get(key)
            if field is None or field not in self.form.fields:
                field = "other_parameters"
                value = [f"{key}: {message}" for message in _messages(value)]
            for message in _messages(value):
                self.form.add_error(field, message)

    def _show_rows(self, formset: EditorFormSet, errors: Any, fields: dict[str, str]) -> None:
        rows = formset.kept_forms()
        by_index = _by_index(errors)
        if not by_index:
            formset.problems.extend(_messages(errors))
            return
        for index, row_errors in by_index.items():
            form = rows[index]
            if not isinstance(row_errors, Mapping):
                form.add_error(None, ", ".join(_messages(row_errors)))
                continue
            for key, value in row_errors.items():
                field = fields.get(key)
                if key == "payload" and isinstance(value, Mapping) and "type" in value:
                    field = "payload_type"
                for message in _messages(value):
                    form.add_error(field, message)
