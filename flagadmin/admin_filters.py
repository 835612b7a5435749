"""List filters the apps' admin pages share."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet


class ArchivedFilter(admin.SimpleListFilter):
    """Active or archived rows, for models that mark archiving with `archived_at`."""

    title = "archived"
    parameter_name = "archived"

    def lookups(self, request, model_admin) -> list[tuple[str, str]]:
        return [("no", "Active"), ("yes", "Archived")]

    def queryset(self, request, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return queryset.filter(archived_at__isnull=self.value() == "no")
        return queryset
