"""The client API, mounted under /api/client/."""

from django.urls import path

from client_api.views import (
    ClientFeaturesView,
    ClientFeatureView,
    ClientMetricsView,
    ClientRegisterView,
)

urlpatterns = [
    path("features", ClientFeaturesView.as_view(), name="client-features"),
    path("features/<str:featureName>", ClientFeatureView.as_view(), name="client-feature"),
    path("register", ClientRegisterView.as_view(), name="client-register"),
    path("metrics", ClientMetricsView.as_view(), name="client-metrics"),
]
