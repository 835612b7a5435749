from django.apps import AppConfig


class FeaturesConfig(AppConfig):
    name = "features"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The definitions app asks which flags' constraints name a context field (it may not
        # import this app: the one-way rule).
        from definitions.usage import register_context_field_usage
        from features.strategy_services import ConstraintContextFieldUsage

        register_context_field_usage(ConstraintContextFieldUsage())
