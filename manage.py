#!/usr/bin/env python
"""Django's command-line utility for flagadmin."""

import os
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent


def dependencies_missing(missing: ModuleNotFoundError) -> str:
    """What to do when this Python lacks the project's packages: most often `python manage.py`
    run outside the virtual environment that scripts/serve and scripts/test create."""
    command = " ".join(["manage.py", *sys.argv[1:]])
    venv_python = PROJECT_DIR / ".venv" / "bin" / "python"
    lines = [
        f"manage.py: this Python ({sys.executable}) does not have flagadmin's packages "
        f"({missing}).",
    ]
    if venv_python.exists():
        lines += [
            "They are installed in the project's virtual environment, .venv. Run:",
            f"    .venv/bin/python {command}",
            f"or activate it first: source .venv/bin/activate && python {command}",
        ]
    else:
        lines += [
            "Install them into a virtual environment first, either by serving once:",
            "    scripts/serve      (creates .venv, installs, migrates, serves)",
            "or by hand, as any Django project:",
            "    python3.11 -m venv .venv && .venv/bin/pip install -e .",
            f"    .venv/bin/python {command}",
        ]
    return "\n".join(lines)


def main() -> None:
    try:
        from django.core.management import execute_from_command_line
    except ModuleNotFoundError as missing:
        sys.exit(dependencies_missing(missing))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flagadmin.settings")
    # A fresh checkout: `migrate` and `runserver` work at once, with the same generated key
    # in .env that scripts/serve writes (never when SECRET_KEY or ENV_FILE is given).
    from flagadmin.localenv import write_local_env

    env_file = PROJECT_DIR / ".env"
    if write_local_env(env_file):
        print(f"Wrote {env_file.name} with a generated SECRET_KEY (local use)", file=sys.stderr)
    try:
        execute_from_command_line(sys.argv)
    except ModuleNotFoundError as missing:
        # Django there, another of the project's packages not (a Python with Django of its own).
        if (missing.name or "").partition(".")[0] in _project_packages():
            raise
        sys.exit(dependencies_missing(missing))


def _project_packages() -> set[str]:
    return {entry.name for entry in PROJECT_DIR.iterdir() if (entry / "__init__.py").exists()}


if __name__ == "__main__":
    main()
