from django.urls import path

from features.clone_views import FeatureCloneViewSet
from features.export_import_views import FeaturesBatchViewSet
from features.metadata_views import (
    ArchivedFeatureViewSet,
    FeatureEnvironmentInfoViewSet,
    FeatureNameViewSet,
    ProjectFeatureMetadataViewSet,
    ProjectStaleViewSet,
)
from features.reading_views import FeatureTypesView
from features.segment_views import SegmentViewSet
from features.strategy_patch_views import FeatureStrategyPatchViewSet
from features.tag_views import FeatureTagViewSet, TagTypeViewSet, TagViewSet
from features.ui_config_views import UiConfigView
from features.variant_views import FeatureEnvironmentVariantsViewSet
from features.views import (
    FeatureDependencyViewSet,
    FeatureEnvironmentViewSet,
    FeatureStrategyViewSet,
    ProjectFeatureBatchViewSet,
    ProjectFeatureViewSet,
)

FLAG_ENVIRONMENT = (
    "projects/<str:projectId>/features/<str:featureName>/environments/<str:environment>"
)

urlpatterns = [
    path("feature-types", FeatureTypesView.as_view(), name="feature-types"),
    path("ui-config", UiConfigView.as_view(), name="ui-config"),
    path(
        "features/<str:featureName>/tags",
        FeatureTagViewSet.as_view({"get": "list", "post": "add", "put": "update"}),
        name="feature-tags",
    ),
    path(
        "features/<str:featureName>/tags/<str:type>/<str:value>",
        FeatureTagViewSet.as_view({"delete": "remove"}),
        name="feature-tag",
    ),
    path("tags", TagViewSet.as_view({"get": "list", "post": "create"}), name="tags"),
    path("tags/<str:type>", TagViewSet.as_view({"get": "by_type"}), name="tags-by-type"),
    path(
        "tags/<str:type>/<str:value>",
        TagViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="tag",
    ),
    path("tag-types", TagTypeViewSet.as_view({"get": "list", "post": "create"}), name="tag-types"),
    path(
        "tag-types/validate",
        TagTypeViewSet.as_view({"post": "validate"}),
        name="tag-type-validate",
    ),
    path(
        "tag-types/<str:name>",
        TagTypeViewSet.as_view({"get": "retrieve", "put": "update", "delete": "destroy"}),
        name="tag-type",
    ),
    path("segments", SegmentViewSet.as_view({"get": "list", "post": "create"}), name="segments"),
    path(
        "segments/validate", SegmentViewSet.as_view({"post": "validate"}), name="segment-validate"
    ),
    path(
        "segments/strategies",
        SegmentViewSet.as_view({"post": "update_strategy_segments"}),
        name="strategy-segments-update",
    ),
    path(
        "segments/strategies/<str:strategyId>",
        SegmentViewSet.as_view({"get": "by_strategy"}),
        name="strategy-segments",
    ),
    path(
        "segments/<str:id>",
        SegmentViewSet.as_view({"get": "retrieve", "put": "update", "delete": "destroy"}),
        name="segment",
    ),
    path(
        "segments/<str:id>/strategies",
        SegmentViewSet.as_view({"get": "strategies"}),
        name="segment-strategies",
    ),
    path(
        "projects/<str:projectId>/features",
        ProjectFeatureViewSet.as_view({"get": "list", "post": "create"}),
        name="project-features",
    ),
    path(
        "projects/<str:projectId>/features/<str:featureName>",
        # With updateFeature and patchFeature (features.metadata_views).
        ProjectFeatureMetadataViewSet.as_view(
            {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}
        ),
        name="project-feature",
    ),
    path(
        "projects/<str:projectId>/stale",
        ProjectStaleViewSet.as_view({"post": "stale"}),
        name="project-features-stale",
    ),
    path(
        "features/validate",
        FeatureNameViewSet.as_view({"post": "validate"}),
        name="feature-validate",
    ),
    path(
        "archive/revive/<str:featureName>",
        ArchivedFeatureViewSet.as_view({"post": "revive"}),
        name="archived-feature-revive",
    ),
    path(
        "archive/<str:featureName>",
        ArchivedFeatureViewSet.as_view({"delete": "destroy"}),
        name="archived-feature",
    ),
    path(
        FLAG_ENVIRONMENT,
        FeatureEnvironmentInfoViewSet.as_view({"get": "retrieve"}),
        name="feature-environment",
    ),
    path(
        "projects/<str:projectId>/archive",
        ProjectFeatureBatchViewSet.as_view({"post": "archive"}),
        name="project-features-archive",
    ),
    path(
        "projects/<str:projectId>/revive",
        ProjectFeatureBatchViewSet.as_view({"post": "revive"}),
        name="project-features-revive",
    ),
    path(
        "projects/<str:projectId>/delete",
        ProjectFeatureBatchViewSet.as_view({"post": "delete_archived"}),
        name="project-features-delete",
    ),
    path(
        "projects/<str:projectId>/bulk_features/environments/<str:environment>/on",
        ProjectFeatureBatchViewSet.as_view({"post": "bulk_on"}),
        name="project-features-bulk-on",
    ),
    path(
        "projects/<str:projectId>/bulk_features/environments/<str:environment>/off",
        ProjectFeatureBatchViewSet.as_view({"post": "bulk_off"}),
        name="project-features-bulk-off",
    ),
    path(
        "projects/<str:projectId>/features/<str:featureName>/clone",
        FeatureCloneViewSet.as_view({"post": "clone"}),
        name="feature-clone",
    ),
    path(
        "projects/<str:projectId>/features/<str:featureName>/dependencies",
        FeatureDependencyViewSet.as_view({"post": "add", "delete": "remove_all"}),
        name="feature-dependencies",
    ),
    path(
        "projects/<str:projectId>/features/<str:featureName>/dependencies/<str:parent>",
        FeatureDependencyViewSet.as_view({"delete": "remove"}),
        name="feature-dependency",
    ),
    path(
        f"{FLAG_ENVIRONMENT}/on",
        FeatureEnvironmentViewSet.as_view({"post": "on"}),
        name="feature-environment-on",
    ),
    path(
        f"{FLAG_ENVIRONMENT}/off",
        FeatureEnvironmentViewSet.as_view({"post": "off"}),
        name="feature-environment-off",
    ),
    path(
        f"{FLAG_ENVIRONMENT}/variants",
        FeatureEnvironmentVariantsViewSet.as_view(
            {"get": "retrieve", "put": "update", "patch": "partial_update"}
        ),
        name="feature-environment-variants",
    ),
    path(
        "projects/<str:projectId>/features/<str:featureName>/variants-batch",
        FeatureEnvironmentVariantsViewSet.as_view({"put": "batch"}),
        name="feature-variants-batch",
    ),
    path(
        f"{FLAG_ENVIRONMENT}/strategies",
        FeatureStrategyViewSet.as_view({"get": "list", "post": "create"}),
        name="feature-strategies",
    ),
    path(
        f"{FLAG_ENVIRONMENT}/strategies/set-sort-order",
        FeatureStrategyViewSet.as_view({"post": "set_sort_order"}),
        name="feature-strategies-sort-order",
    ),
    path(
        f"{FLAG_ENVIRONMENT}/strategies/<str:strategyId>",
        # With patchFeatureStrategy (features.strategy_patch_views).
        FeatureStrategyPatchViewSet.as_view(
            {
                "get": "retrieve",
                "put": "update",
                "patch": "partial_update",
                "delete": "destroy",
            }
        ),
        name="feature-strategy",
    ),
    path(
        "features-batch/export",
        FeaturesBatchViewSet.as_view({"post": "export"}),
        name="features-batch-export",
    ),
    path(
        "features-batch/validate",
        FeaturesBatchViewSet.as_view({"post": "validate"}),
        name="features-batch-validate",
    ),
    path(
        "features-batch/import",
        FeaturesBatchViewSet.as_view({"post": "import_"}),
        name="features-batch-import",
    ),
]
