"""Root URLs: the admin API, the client API (SDKs), the SAML sign-in, the OpenAPI document,
health, the Django admin."""

from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView, TemplateView
from drf_spectacular.views import SpectacularSwaggerView

from client_api.views import UnknownClientPathView
from flagadmin.api.schema import OpenApiDocumentView
from flagadmin.api.views import HealthView, ReadyView, UnknownApiPathView

api_admin = [
    path("", include("flagadmin.api.urls")),
    path("", include("projects.urls")),
    path("", include("overview.urls")),
    path("", include("definitions.urls")),
    path("", include("features.urls")),
    path("", include("groups.urls")),
    path("", include("users.urls")),
    path("", include("auth_saml.urls")),
    path("", include("evaluation.urls")),
]

urlpatterns = [
    path("api/admin/", include(api_admin)),
    path("api/client/", include("client_api.urls")),
    # The client API's own root: a client token's 404 too.
    path("api/client", UnknownClientPathView.as_view()),
    path("api/frontend", include("frontend_api.urls")),
    path("edge/", include("client_api.edge_urls")),
    # Everything else under /api/: 401 without credentials, then 404 NotFoundError.
    re_path(r"^api(?:/[\s\S]*)?$", UnknownApiPathView.as_view()),  # [\s\S]: newlines too
    path("auth/saml/", include("auth_saml.sso_urls")),
    path("health", HealthView.as_view(), name="health"),
    path("ready", ReadyView.as_view(), name="ready"),
    path("docs/openapi.json", OpenApiDocumentView.as_view(), name="openapi-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="openapi-schema"), name="swagger-ui"),
    path("admin/", admin.site.urls),
    # APPEND_SLASH is off (API paths are exact); the two human entry points still forgive it.
    path("admin", RedirectView.as_view(url="/admin/", permanent=True)),
    path("docs", RedirectView.as_view(url="/docs/", permanent=True)),
    path("", TemplateView.as_view(template_name="flagadmin/home.html"), name="home"),
]

handler404 = "flagadmin.api.views.not_found_handler"
handler500 = "flagadmin.api.views.server_error_handler"
