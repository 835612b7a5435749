from django.urls import path

from definitions.views import (
    ContextFieldViewSet,
    LegalValueViewSet,
    StrategyDeprecationViewSet,
    StrategyViewSet,
)

urlpatterns = [
    path("context", ContextFieldViewSet.as_view({"get": "list", "post": "create"}), name="context"),
    path(
        "context/validate",
        ContextFieldViewSet.as_view({"post": "validate"}),
        name="context-field-validate",
    ),
    path(
        "context/<str:contextField>",
        ContextFieldViewSet.as_view({"get": "retrieve", "put": "update", "delete": "destroy"}),
        name="context-field",
    ),
    path(
        "context/<str:contextField>/strategies",
        ContextFieldViewSet.as_view({"get": "strategies"}),
        name="context-field-strategies",
    ),
    path(
        "context/<str:contextField>/legal-values",
        LegalValueViewSet.as_view({"post": "create"}),
        name="context-field-legal-values",
    ),
    path(
        "context/<str:contextField>/legal-values/<str:legalValue>",
        LegalValueViewSet.as_view({"delete": "destroy"}),
        name="context-field-legal-value",
    ),
    path(
        "strategies", StrategyViewSet.as_view({"get": "list", "post": "create"}), name="strategies"
    ),
    path(
        "strategies/<str:name>",
        StrategyViewSet.as_view({"get": "retrieve", "put": "update", "delete": "destroy"}),
        name="strategy",
    ),
    path(
        "strategies/<str:strategyName>/deprecate",
        StrategyDeprecationViewSet.as_view({"post": "deprecate"}),
        name="strategy-deprecate",
    ),
    path(
        "strategies/<str:strategyName>/reactivate",
        StrategyDeprecationViewSet.as_view({"post": "reactivate"}),
        name="strategy-reactivate",
    ),
]
