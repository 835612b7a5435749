"""The core's own admin API: API tokens, service accounts and the event log."""

from django.urls import path

from flagadmin.api.event_search_views import EventSearchView
from flagadmin.api.event_views import EventsView, FeatureEventsView
from flagadmin.api.token_views import ApiTokenView, ProjectApiTokensView, ProjectApiTokenView
from flagadmin.api.user_views import MeView
from flagadmin.api.views import ApiTokensView, ServiceAccountsView, ServiceAccountTokensView

urlpatterns = [
    path("api-tokens", ApiTokensView.as_view(), name="api-tokens"),
    # API tokens named by their secret, and a project's client tokens (token_views).
    path("api-tokens/<str:token>", ApiTokenView.as_view(), name="api-token"),
    path(
        "projects/<str:projectId>/api-tokens",
        ProjectApiTokensView.as_view(),
        name="project-api-tokens",
    ),
    path(
        "projects/<str:projectId>/api-tokens/<str:token>",
        ProjectApiTokenView.as_view(),
        name="project-api-token",
    ),
    path("events", EventsView.as_view(), name="events"),
    path("search/events", EventSearchView.as_view(), name="search-events"),
    path("events/<str:featureName>", FeatureEventsView.as_view(), name="feature-events"),
    path("service-account", ServiceAccountsView.as_view(), name="service-accounts"),
    path("user", MeView.as_view(), name="me"),
    path(
        "service-account/<int:id>/token",
        ServiceAccountTokensView.as_view(),
        name="service-account-tokens",
    ),
]
