"""The project endpoints, mounted under /api/admin/."""

from django.urls import path

from projects.views import ProjectAccessViewSet, ProjectViewSet

urlpatterns = [
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
    path(
        "projects/<str:projectId>/access",
        ProjectAccessViewSet.as_view({"post": "create"}),
        name="project-access",
    ),
]
