from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The core validates API tokens' project and environment scopes through checks that
        # this app, above it, provides (flagadmin.core.services.TokenScopeChecks).
        from flagadmin.core.services import register_token_scope_checks
        from projects.token_scope import ProjectTokenScopeChecks

        register_token_scope_checks(ProjectTokenScopeChecks())
