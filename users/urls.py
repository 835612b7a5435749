"""Routes of the users app, under /api/admin/."""

from django.urls import path

from users.views import UserAdminViewSet

urlpatterns: list = [
    path(
        "user-admin",
        UserAdminViewSet.as_view({"get": "list", "post": "create"}),
        name="user-admin",
    ),
]
