"""The client API, mounted under /api/client/."""

from django.urls import path

from client_api.views import ClientFeaturesView, ClientMetricsView, ClientRegisterView

urlpatterns = [
    path("features", ClientFeaturesView.as_view(), name="client-features"),
    path("register", ClientRegisterView.as_view(), name="client-register"),
    path("metrics", ClientMetricsView.as_view(), name="client-metrics"),
]
