"""The Frontend API, mounted under /api/frontend."""

urlpatterns: list = []
