"""`manage.py createapitoken`: issue an admin, client or personal API token and print it once."""

from __future__ import annotations

from datetime import UTC

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from flagadmin.core.models import AccountType, User
from flagadmin.core.services import environment_exists, unknown_projects
from flagadmin.core.tokens import issue_token

TYPES = ("admin", "client", "personal")


class Command(BaseCommand):
    help = (
        "Create an API token and print it. Only its digest is stored: copy the printed token "
        "now, it cannot be shown again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--type", choices=TYPES, default="admin", help="Default: admin.")
        parser.add_argument("--name", help="A name to recognise the token by.")
        parser.add_argument(
            "--projects",
            default="*",
            help='Client tokens: comma-separated project ids, or "*" for all (the default).',
        )
        parser.add_argument(
            "--environment",
            default="development",
            help="Client tokens: the environment (default: development).",
        )
        parser.add_argument(
            "--user", help="Personal tokens: the username, email or id of the user it acts as."
        )
        parser.add_argument(
            "--expires-at",
            help="When the token stops working, ISO 8601 (e.g. 2030-01-31T00:00:00Z). "
            "Default: never.",
        )
        parser.add_argument(
            "--quiet-token",
            action="store_true",
            help="Print only the token (for scripts).",
        )

    def handle(self, *args, **options) -> None:
        token_type = options["type"]
        expires_at = self._expires_at(options["expires_at"])
        projects = [p.strip() for p in options["projects"].split(",") if p.strip()] or ["*"]
        if "*" in projects:
            projects = ["*"]
        environment = options["environment"]
        user = None
        if token_type == "client":
            missing = unknown_projects(projects)
            if missing:
                raise CommandError(f"unknown project(s): {', '.join(missing)}")
            if not environment_exists(environment):
                raise CommandError(f"unknown environment: {environment}")
        if token_type == "personal":
            user = self._user(options["user"])
        elif options["user"]:
            raise CommandError("--user applies to personal tokens only")
        name = options["name"] or (
            f"{user.username or user.pk}-token" if user is not None else f"{token_type}-token"
        )
        token, plaintext = issue_token(
            name=name,
            token_type=token_type,
            projects=projects,
            environment=environment,
            user=user,
            expires_at=expires_at,
            created_by="manage.py createapitoken",
        )
        if options["quiet_token"]:
            self.stdout.write(plaintext)
            return
        self.stdout.write(
            f"Created {token_type} token {token.name!r} (id {token.pk}). "
            "Copy it now, it is not stored and cannot be shown again:"
        )
        self.stdout.write(plaintext)

    @staticmethod
    def _expires_at(raw: str | None):
        if not raw:
            return None
        try:
            value = parse_datetime(raw)
        except ValueError:
            value = None
        if value is None:
            raise CommandError(f"--expires-at: not an ISO 8601 date-time: {raw}")
        if timezone.is_naive(value):
            value = value.replace(tzinfo=UTC)
        if value <= timezone.now():
            raise CommandError("--expires-at must be in the future")
        return value

    @staticmethod
    def _user(ref: str | None) -> User:
        if not ref:
            raise CommandError("personal tokens need --user")
        query = Q(username__iexact=ref) | Q(email__iexact=ref)
        if ref.lstrip("-").isdigit():
            query |= Q(pk=int(ref))
        users = list(User.objects.filter(query)[:2])
        if len(users) != 1:
            raise CommandError(f"no single user matches {ref!r}")
        user = users[0]
        if user.account_type == AccountType.SYSTEM:
            raise CommandError(f"{ref!r} is a system user: use --type admin instead")
        if not user.is_active:
            raise CommandError(f"user {ref!r} is not active")
        return user
