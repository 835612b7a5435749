"""Unleash Edge's upstream endpoints outside /api/client/, mounted under /edge/."""

urlpatterns: list = []
