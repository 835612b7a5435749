"""The projects (but their access, in `projects.urls`) and the environments, mounted under
/api/admin/ before `features.urls`: `projects/archive/<projectId>` must win over a flag path
such as `projects/<projectId>/archive` for a project named `archive`."""

from django.urls import path

from overview.environment_views import EnvironmentsView, EnvironmentView
from overview.project_views import ProjectViewSet
from overview.search_views import FeatureSearchView

urlpatterns = [
    path("search/features", FeatureSearchView.as_view(), name="search-features"),
    path("environments", EnvironmentsView.as_view(), name="environments"),
    path("environments/<str:name>", EnvironmentView.as_view(), name="environment"),
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
