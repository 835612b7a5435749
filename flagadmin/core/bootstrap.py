"""Work done once when a server process starts."""

import logging

from django.conf import settings
from django.db import DatabaseError

logger = logging.getLogger(__name__)


def bootstrap_api_tokens() -> None:
    """Create INIT_ADMIN_API_TOKENS / INIT_CLIENT_API_TOKENS if missing (as Unleash at start-up).
    A database that is not migrated yet is not an error here: `migrate` runs this again."""
    if not (settings.INIT_ADMIN_API_TOKENS or settings.INIT_CLIENT_API_TOKENS):
        return
    from flagadmin.core.tokens import ensure_bootstrap_tokens

    try:
        created = ensure_bootstrap_tokens(
            settings.INIT_ADMIN_API_TOKENS, settings.INIT_CLIENT_API_TOKENS
        )
    except DatabaseError as exc:
        logger.warning("bootstrap API tokens not created yet: %s", exc)
        return
    if created:
        logger.info("created %d bootstrap API token(s)", created)
