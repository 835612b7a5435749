"""The client API, mounted under /api/client/."""

from django.urls import path, re_path

from client_api.edge_views import ClientBulkMetricsView
from client_api.views import (
    ClientFeaturesView,
    ClientFeatureView,
    ClientMetricsView,
    ClientRegisterView,
    UnknownClientPathView,
)

urlpatterns = [
    path("features", ClientFeaturesView.as_view(), name="client-features"),
    path("features/<str:featureName>", ClientFeatureView.as_view(), name="client-feature"),
    path("register", ClientRegisterView.as_view(), name="client-register"),
    path("metrics", ClientMetricsView.as_view(), name="client-metrics"),
    path("metrics/bulk", ClientBulkMetricsView.as_view(), name="client-metrics-bulk"),
    # Anything else under /api/client/: a client token's 404 (not the admin API's 403).
    re_path(r"^[\s\S]*$", UnknownClientPathView.as_view()),
]
