"""List filters the apps' admin pages share."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet


class ArchivedFilter(admin.SimpleListFilter):
    """Active or archived rows, for models that mark archiving with `archived_at`."""

    title = "archived"
    parameter_name = "archived"
    # What the list shows without the parameter ("no": active rows); None: every row.
    default: str | None = None

    def lookups(self, request, model_admin) -> list[tuple[str, str]]:
        choices = [("no", "Active"), ("yes", "Archived")]
        return choices if self.default is None else [*choices, ("all", "All")]

    def value(self) -> str | None:
        return super().value() or self.default

    def choices(self, changelist):
        choices = super().choices(changelist)
        if self.default is not None:
            next(choices)  # Django's "All" drops the parameter, which here means the default
        yield from choices

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return queryset.filter(archived_at__isnull=self.value() == "no")
        return queryset


class ActiveByDefaultFilter(ArchivedFilter):
    """Active rows unless archived (or all) ones are asked for, as Unleash lists flags."""

    default = "no"
