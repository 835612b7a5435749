from django.urls import path

from features.views import ProjectFeatureViewSet

urlpatterns = [
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
