#!/usr/bin/env python
"""Django's command-line utility for flagadmin."""

import os
import sys
from pathlib import Path


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flagadmin.settings")
    # A fresh checkout: `migrate` and `runserver` work at once, with the same generated key
    # in .env that scripts/serve writes (never when SECRET_KEY or ENV_FILE is given).
    from flagadmin.localenv import write_local_env

    env_file = Path(__file__).resolve().parent / ".env"
    if write_local_env(env_file):
        print(f"Wrote {env_file.name} with a generated SECRET_KEY (local use)", file=sys.stderr)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
