"""NUL bytes in path parameters and query strings: PostgreSQL cannot compare text with them, so
the shared view base answers before any query runs (404 for a path, 400 for a query)."""

from __future__ import annotations

import pytest
from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from tests.conftest import assert_error


class ProjectScopedView(AdminApiMixin, APIView):
    """Stands for any project-scoped admin view: its permission check queries the project."""

    required_permission = perms.CREATE_FEATURE
    project_url_kwarg = "projectId"

    def get(self, request, projectId: str) -> Response:
        return Response({"projectId": projectId})


urlpatterns = [path("api/admin/scoped/<str:projectId>", ProjectScopedView.as_view())]

pytestmark = pytest.mark.urls(__name__)


def test_nul_in_path_parameter__404_before_any_query(editor_client, django_assert_max_num_queries):
    # Editor: a personal token, so the permission check would query the project's roles.
    with django_assert_max_num_queries(2):  # the token lookup and its last-used touch only
        response = editor_client.get("/api/admin/scoped/de%00fault")

    assert_error(response, 404, "NotFoundError")


def test_nul_in_path_parameter__anonymous__401_first(anon_client, db):
    assert_error(anon_client.get("/api/admin/scoped/de%00fault"), 401, "AuthenticationRequired")


def test_plain_path_parameter_still_works(editor_client):
    assert editor_client.get("/api/admin/scoped/default").json() == {"projectId": "default"}


@pytest.mark.parametrize(
    ("query", "path"),
    [("archived=tr%00ue", "/query/archived"), ("a%00b=1", "/query/a\x00b")],
)
def test_nul_in_query__400_naming_it(editor_client, query, path):
    response = editor_client.get(f"/api/admin/scoped/default?{query}")

    body = assert_error(response, 400, "ValidationError")
    assert body["details"] == [
        {
            "path": path,
            "message": f"The `{path}` property must not contain the NUL character (\\u0000).",
        }
    ]
