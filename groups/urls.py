"""Routes of the groups app, under /api/admin/. `groupId` takes any string so that `abc`
reaches the view, which answers 404 `No group found` after the checks that come first."""

from django.urls import path

from groups.views import GroupViewSet

urlpatterns: list = [
    path("groups", GroupViewSet.as_view({"get": "list", "post": "create"}), name="groups"),
    path(
        "groups/<str:groupId>",
        GroupViewSet.as_view({"get": "retrieve", "put": "update", "delete": "destroy"}),
        name="group",
    ),
]
