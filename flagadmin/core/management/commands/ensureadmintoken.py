"""`manage.py ensureadmintoken`: make sure one usable admin API token exists (scripts/serve)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser
from django.db.models import Q
from django.utils import timezone

from flagadmin.core.models import ApiToken, TokenType
from flagadmin.core.tokens import issue_token


class Command(BaseCommand):
    help = (
        "Create an admin API token when no usable one exists and print it (it is stored only as "
        "a digest, so it is printed this once). When one exists, say so."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", default="local-admin", help="Default: local-admin.")
        parser.add_argument(
            "--base-url",
            default="http://127.0.0.1:8000",
            help="Where the API is served, for the example command printed.",
        )

    def handle(self, *args, **options) -> None:
        projects_url = f"{options['base_url'].rstrip('/')}/api/admin/projects"
        now = timezone.now()
        usable = ApiToken.objects.filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now),
            type=TokenType.ADMIN,
            revoked_at__isnull=True,
        )
        existing = usable.order_by("id").first()
        if existing is not None:
            self.stdout.write(
                f"An admin API token exists already ({existing.name!r}, id {existing.pk}); "
                "its secret was printed when it was created and is not stored.\n"
                "To create another: .venv/bin/python manage.py createapitoken --type admin "
                "--name <name>\n"
                f'Call the API with: curl -H "Authorization: <your admin token>" {projects_url}'
            )
            return
        _, plaintext = issue_token(
            name=options["name"],
            token_type=TokenType.ADMIN,
            created_by="manage.py ensureadmintoken",
        )
        self.stdout.write(
            "Created an admin API token. Copy it now, it is not stored and cannot be shown again:"
        )
        self.stdout.write(plaintext)
        self.stdout.write(f'Call the API with: curl -H "Authorization: {plaintext}" {projects_url}')
