"""The playground, mounted under /api/admin/."""

urlpatterns: list = []
