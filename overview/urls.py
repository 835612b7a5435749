"""The projects (but their access, in `projects.urls`) and the environments, mounted under
/api/admin/ before `features.urls`: `projects/archive/<projectId>` must win over a flag path
such as `projects/<projectId>/archive` for a project named `archive`."""

from django.urls import path

from features.metrics_views import (
    ApplicationsView,
    ApplicationView,
    FeatureUsageView,
    RawFeatureMetricsView,
)
from overview.environment_views import EnvironmentsView, EnvironmentView
from overview.project_views import ProjectViewSet
from overview.reading_views import ProjectEnvironmentsView, ProjectOverviewView
from overview.search_views import FeatureSearchView

urlpatterns = [
    path("search/features", FeatureSearchView.as_view(), name="search-features"),
    # The client metrics read back (features.metrics_views), mounted with the other reads.
    path("metrics/applications", ApplicationsView.as_view(), name="applications"),
    path("metrics/applications/<str:appName>", ApplicationView.as_view(), name="application"),
    path(
        "client-metrics/features/<str:name>",
        FeatureUsageView.as_view(),
        name="feature-usage",
    ),
    path(
        "client-metrics/features/<str:name>/raw",
        RawFeatureMetricsView.as_view(),
        name="feature-metrics-raw",
    ),
    path("environments", EnvironmentsView.as_view(), name="environments"),
    path("environments/<str:name>", EnvironmentView.as_view(), name="environment"),
    path(
        "environments/project/<str:projectId>",
        ProjectEnvironmentsView.as_view(),
        name="project-environments",
    ),
    path(
        "projects/<str:projectId>/overview",
        ProjectOverviewView.as_view(),
        name="project-overview",
    ),
    path(
        "projects",
        ProjectViewSet.as_view({"get": "list", "post": "create"}),
        name="projects",
    ),
    path("projects/<str:projectId>", ProjectViewSet.as_view({"get": "retrieve"}), name="project"),
    path(
        "projects/archive/<str:projectId>",
        ProjectViewSet.as_view({"post": "archive"}),
        name="project-archive",
    ),
    path(
        "projects/revive/<str:projectId>",
        ProjectViewSet.as_view({"post": "revive"}),
        name="project-revive",
    ),
]
