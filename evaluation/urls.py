"""The playground, mounted under /api/admin/."""

from django.urls import path

from evaluation.views import AdvancedPlaygroundView, PlaygroundView

urlpatterns = [
    path("playground", PlaygroundView.as_view(), name="playground"),
    path("playground/advanced", AdvancedPlaygroundView.as_view(), name="playground-advanced"),
]
