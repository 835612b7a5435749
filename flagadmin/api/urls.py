"""The core's own admin API: API tokens and service accounts."""

from django.urls import path

from flagadmin.api.views import ApiTokensView, ServiceAccountsView, ServiceAccountTokensView

urlpatterns = [
    path("api-tokens", ApiTokensView.as_view(), name="api-tokens"),
    path("service-account", ServiceAccountsView.as_view(), name="service-accounts"),
    path(
        "service-account/<int:id>/token",
        ServiceAccountTokensView.as_view(),
        name="service-account-tokens",
    ),
]
