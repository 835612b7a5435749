"""The projects app's answers to the core's questions about API token scopes
(flagadmin.core.services.TokenScopeChecks), registered in projects.apps."""

from __future__ import annotations

from collections.abc import Iterable

from projects.models import Environment, Project


class ProjectTokenScopeChecks:
    def unknown_projects(self, project_ids: Iterable[str]) -> set[str]:
        wanted = set(project_ids)
        found = set(Project.objects.filter(pk__in=wanted).values_list("pk", flat=True))
        return wanted - found

    def environment_exists(self, name: str) -> bool:
        return Environment.objects.filter(pk=name).exists()
