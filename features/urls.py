from django.urls import path

from features.project_views import ProjectViewSet
from features.views import ProjectFeatureViewSet

urlpatterns = [
    path(
        "projects",
        ProjectViewSet.as_view({"get": "list", "post": "create"}),
        name="projects",
    ),
    path("projects/<str:projectId>", ProjectViewSet.as_view({"get": "retrieve"}), name="project"),
    path(
        "projects/<str:projectId>/archive",
        ProjectViewSet.as_view({"post": "archive"}),
        name="project-archive",
    ),
    path(
        "projects/<str:projectId>/revive",
        ProjectViewSet.as_view({"post": "revive"}),
        name="project-revive",
    ),
    path(
        "projects/<str:projectId>/features",
        ProjectFeatureViewSet.as_view({"post": "create"}),
        name="project-features",
    ),
    path(
        "projects/<str:projectId>/features/<str:featureName>",
        ProjectFeatureViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="project-feature",
    ),
]
