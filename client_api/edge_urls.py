"""Unleash Edge's upstream endpoints outside /api/client/, mounted under /edge/."""

from django.urls import path

from client_api.edge_views import EdgeValidateView

urlpatterns = [
    path("validate", EdgeValidateView.as_view(), name="edge-validate"),
]
