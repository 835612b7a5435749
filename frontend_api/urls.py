"""The Frontend API, mounted under /api/frontend (so its patterns start with `/`, or are empty
for /api/frontend itself)."""

from django.urls import path, re_path

from frontend_api.views import (
    FrontendFeaturesView,
    FrontendMetricsView,
    FrontendRegisterView,
    NotImplementedView,
    UnknownFrontendPathView,
)

urlpatterns = [
    path("", FrontendFeaturesView.as_view(), name="frontend-features"),
    path("/client/metrics", FrontendMetricsView.as_view(), name="frontend-metrics"),
    path("/client/register", FrontendRegisterView.as_view(), name="frontend-register"),
    # The Unleash Proxy's other paths, which Unleash's Frontend API answers with 405.
    path("/client/features", NotImplementedView.as_view()),
    path("/health", NotImplementedView.as_view()),
    path("/internal-backstage/prometheus", NotImplementedView.as_view()),
    # Anything else under /api/frontend/: a frontend token's 404.
    re_path(r"^/[\s\S]*$", UnknownFrontendPathView.as_view()),  # [\s\S]: newlines too
]
