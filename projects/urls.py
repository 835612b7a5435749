"""The project endpoints of this app, mounted under /api/admin/ (those answering with a
project's figures are routed by `overview.urls`)."""

from django.urls import path

from projects.views import ProjectAccessViewSet

urlpatterns = [
    path(
        "projects/<str:projectId>/access",
        ProjectAccessViewSet.as_view({"post": "create"}),
        name="project-access",
    ),
]
