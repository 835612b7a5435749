"""The playground in the Django admin: an operator types a context (environment, appName, userId,
sessionId, remoteAddress, currentTime, properties) and sees, for each flag, the decision, the
variant and why: which strategy matched, or which constraint, segment, rollout or dependency
did not. The answers are `POST /api/admin/playground`'s (`evaluation.playground`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path

from evaluation.models import Playground
from evaluation.playground import playground
from evaluation.serializers import PlaygroundContextSchemaSerializer
from flagadmin.api.errors import validation_details
from projects.models import Environment, Project

DEFAULT_APP_NAME = "flagadmin-admin-playground"


class PlaygroundForm(forms.Form):
    environment = forms.ChoiceField()
    projects = forms.MultipleChoiceField(required=False, help_text="None selected: every project.")
    appName = forms.CharField(initial=DEFAULT_APP_NAME, label="appName")
    userId = forms.CharField(required=False, label="userId")
    sessionId = forms.CharField(required=False, label="sessionId")
    remoteAddress = forms.CharField(required=False, label="remoteAddress")
    currentTime = forms.CharField(
        required=False,
        label="currentTime",
        help_text="An RFC 3339 date-time such as 2030-01-31T12:00:00Z (default: now).",
    )
    properties = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 40}),
        help_text="One name=value a line, e.g. country=no.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["environment"].choices = [
            (name, name) for name in Environment.objects.values_list("name", flat=True)
        ]
        self.fields["projects"].choices = [
            (project, project)
            for project in Project.objects.filter(archived_at__isnull=True).values_list(
                "id", flat=True
            )
        ]

    def clean_properties(self) -> dict[str, str]:
        found = {}
        for number, line in enumerate(self.cleaned_data["properties"].splitlines(), start=1):
            if not line.strip():
                continue
            name, equals, value = line.partition("=")
            if not equals or not name.strip():
                raise forms.ValidationError(f"Line {number} is not name=value.")
            found[name.strip()] = value.strip()
        return found

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        context: dict[str, Any] = {
            key: cleaned[key]
            for key in ("appName", "userId", "sessionId", "remoteAddress", "currentTime")
            if cleaned.get(key)
        }
        if cleaned.get("properties"):
            context["properties"] = cleaned["properties"]
        # The API's own rules for a context.
        checked = PlaygroundContextSchemaSerializer(data=context)
        if not checked.is_valid():
            for detail in validation_details(checked.errors, context, location="context"):
                self.add_error(None, detail["message"])
        cleaned["context"] = context
        return cleaned


def _constraint_text(constraint: dict[str, Any]) -> str:
    values = constraint.get("value") or ", ".join(constraint.get("values") or [])
    flags = [
        word
        for word, on in (
            ("not", constraint.get("inverted")),
            ("case-insensitive", constraint.get("caseInsensitive")),
        )
        if on
    ]
    prefix = f"{' '.join(flags)} " if flags else ""
    return f"{constraint['contextName']} {prefix}{constraint['operator']} {values}".strip()


def _strategy_label(index: int, strategy: dict[str, Any]) -> str:
    title = f" “{strategy['title']}”" if strategy.get("title") else ""
    return f"strategy {index} ({strategy['name']}{title})"


def _why_not(index: int, strategy: dict[str, Any]) -> str:
    label = _strategy_label(index, strategy)
    result = strategy["result"]
    if result["evaluationStatus"] == "unevaluated":
        return f"{label} is paused"
    failed = [c for c in strategy["constraints"] if not c["result"]]
    if failed:
        return f"{label}: constraint {_constraint_text(failed[0])} does not hold"
    segments = [s for s in strategy["segments"] if not s["result"]]
    if segments:
        return f"{label}: segment “{segments[0]['name']}” does not hold"
    if result["evaluationStatus"] == "incomplete":
        return f"{label} is a custom strategy, which cannot be decided here"
    return f"{label}: its rollout or parameters leave this context out"


def why(feature: dict[str, Any], environment: str) -> str:
    """One sentence on why a flag is on or off for the context."""
    strategies = feature["strategies"]["data"]
    if not feature["isEnabledInCurrentEnvironment"]:
        return f"Off in {environment}."
    if feature["hasUnsatisfiedDependency"]:
        return "A flag it depends on is not as the dependency requires."
    if feature["isEnabled"]:
        for index, strategy in enumerate(strategies, start=1):
            if strategy["result"]["enabled"] is True:
                label = _strategy_label(index, strategy)
                return f"{label[0].upper()}{label[1:]} matched."
        return f"On in {environment}, with no strategy."
    if not strategies:
        return "No strategy."
    return (
        "No strategy matched: "
        + "; ".join(_why_not(index, strategy) for index, strategy in enumerate(strategies, start=1))
        + "."
    )


# A strategy's result in words, by evaluation status.
_RESULT_WORDS: dict[str, dict[Any, str]] = {
    "complete": {True: "matches", False: "does not match"},
    "incomplete": {False: "does not match", "unknown": "custom: cannot be decided here"},
    "unevaluated": {"unknown": "paused"},
}


def _shown(feature: dict[str, Any], environment: str) -> dict[str, Any]:
    variant = feature["variant"]
    return {
        "name": feature["name"],
        "project": feature["projectId"],
        "enabled": feature["isEnabled"],
        "variant": variant["name"] if variant.get("enabled") else None,
        "payload": (variant.get("payload") or {}).get("value"),
        "why": why(feature, environment),
        "strategies": [
            {
                "label": _strategy_label(index, strategy),
                "result": _RESULT_WORDS[strategy["result"]["evaluationStatus"]].get(
                    strategy["result"]["enabled"], "unknown"
                ),
                "constraints": [
                    (_constraint_text(c), c["result"]) for c in strategy["constraints"]
                ],
                "segments": [
                    (
                        segment["name"],
                        segment["result"],
                        [(_constraint_text(c), c["result"]) for c in segment["constraints"]],
                    )
                    for segment in strategy["segments"]
                ],
            }
            for index, strategy in enumerate(feature["strategies"]["data"], start=1)
        ],
    }


@admin.register(Playground)
class PlaygroundAdmin(admin.ModelAdmin):
    """The page itself: the list view of a model without rows."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        page = self.admin_site.admin_view(self.changelist_view)
        return [path("", page, name="{}_{}_changelist".format(*info))]

    def changelist_view(self, request: HttpRequest, extra_context=None) -> HttpResponse:
        asked = "environment" in request.GET
        form = PlaygroundForm(request.GET if asked else None)
        features = None
        if asked and form.is_valid():
            environment = form.cleaned_data["environment"]
            found = playground(
                environment=environment,
                projects=form.cleaned_data["projects"] or None,
                context=form.cleaned_data["context"],
            )
            features = [_shown(feature, environment) for feature in found]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Playground",
            "form": form,
            "features": features,
        }
        return TemplateResponse(request, "admin/evaluation/playground.html", context)
