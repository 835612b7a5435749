"""A newcomer's first run: scripts/serve installs only what serving needs and shows pip's
progress (scripts/venv.sh, shared with scripts/test and .ci/run, which install the test tooling
too); `manage.py` outside the virtual environment says what to do; the xmlsec1 warning only
where SAML is enabled; the README's Django path ends with a working curl; pytest names the
reason of each skip."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from django.core.management import call_command

import manage
from auth_saml.checks import xmlsec1_installed
from auth_saml.models import SamlSettings

REPO_ROOT = Path(__file__).resolve().parents[2]


# --- scripts/venv.sh ---------------------------------------------------------------------

# Stands in for .venv/bin/python: `-c` runs in the real Python (the stamp's digest), `-m pip`
# is written down in pip.log and answers as pip does (or fails when pip.fail exists).
FAKE_PYTHON = """#!/usr/bin/env bash
here=$(dirname "$0")
if [[ $1 == -m && $2 == pip ]]; then
    shift 2
    echo "$*" >>"$here/pip.log"
    echo "Requirement already satisfied: pip in ./.venv/lib/python3.11/site-packages (24.0)"
    echo "Collecting Django<5.3,>=5.2 (from flagadmin==0.1.0)"
    echo "  Downloading django-5.2.8-py3-none-any.whl (8.3 MB)"
    echo "WARNING: Location 'file:///opt/absent/simple/django/' is ignored" >&2
    if [[ -e $here/pip.fail ]]; then echo "ERROR: No matching distribution" >&2; exit 1; fi
    echo "Successfully installed Django-5.2.8"
    exit 0
fi
exec {python} "$@"
"""


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A folder with pyproject.toml, scripts/venv.sh and a `.venv` whose pip is `FAKE_PYTHON`."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO_ROOT / "scripts" / "venv.sh", tmp_path / "scripts" / "venv.sh")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "flagadmin"\n')
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    return tmp_path


def _ensure_venv(checkout: Path, *arguments: str) -> tuple[int, str, list[str]]:
    """Runs `ensure_venv <arguments>` as scripts/serve does (set -euo pipefail); its status,
    its output, and the pip commands it ran."""
    log = checkout / ".venv" / "bin" / "pip.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(
        [
            "bash",
            "-c",
            f"set -euo pipefail; source scripts/venv.sh; ensure_venv {' '.join(arguments)}",
        ],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=60,
    )
    pip = log.read_text().splitlines() if log.exists() else []
    return done.returncode, done.stdout + done.stderr, pip


def test_ensure_venv__serve__installs_without_test_tooling__shows_progress(checkout):
    status, output, pip = _ensure_venv(checkout, "serve")

    assert status == 0
    assert pip == [
        "install --disable-pip-version-check --upgrade pip",
        "install --disable-pip-version-check -e .",
    ]
    progress = (
        "    Collecting Django<5.3,>=5.2\n"
        "      Downloading django-5.2.8-py3-none-any.whl (8.3 MB)\n"
        "    Successfully installed Django-5.2.8\n"
    )
    assert output == (
        "Installing flagadmin and what it needs to serve into .venv (pip install -e '.').\n"
        "A first install downloads every package: a minute or two. pip's progress follows.\n"
        + progress * 2
        + "Installed into .venv.\n"
    )


def test_ensure_venv__installed__nothing_to_do(checkout):
    _ensure_venv(checkout, "serve")

    assert _ensure_venv(checkout, "serve") == (0, "", [])


def test_ensure_venv__dev_after_serve__test_tooling_added__serve_then_satisfied(checkout):
    _ensure_venv(checkout, "serve")

    status, output, pip = _ensure_venv(checkout)

    assert status == 0
    assert pip[-1] == "install --disable-pip-version-check -e .[dev]"
    assert output.startswith(
        "Installing flagadmin, what it needs to serve, and the test tooling into .venv "
        "(pip install -e '.[dev]').\n    Collecting"
    )
    assert _ensure_venv(checkout, "serve") == (0, "", [])
    assert _ensure_venv(checkout) == (0, "", [])


def test_ensure_venv__pyproject_changed__installed_again(checkout):
    _ensure_venv(checkout, "serve")
    (checkout / "pyproject.toml").write_text('[project]\nname = "flagadmin"\nversion = "2"\n')

    status, output, pip = _ensure_venv(checkout, "serve")

    assert (status, pip[-1]) == (0, "install --disable-pip-version-check -e .")
    assert "A first install" not in output


def test_ensure_venv__stamp_of_older_scripts__taken_as_dev(checkout):
    digest = subprocess.run(
        [
            checkout / ".venv" / "bin" / "python",
            "-c",
            "import hashlib; print(hashlib.sha256("
            "open('pyproject.toml', 'rb').read()).hexdigest())",
        ],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (checkout / ".venv" / ".flagadmin-installed").write_text(digest)

    assert _ensure_venv(checkout) == (0, "", [])
    assert _ensure_venv(checkout, "serve") == (0, "", [])


def test_ensure_venv__pip_fails__fails__nothing_recorded(checkout):
    (checkout / ".venv" / "bin" / "pip.fail").touch()

    status, output, _ = _ensure_venv(checkout, "serve")

    assert status != 0
    assert "    ERROR: No matching distribution\n" in output
    assert "Installed into .venv." not in output
    assert not (checkout / ".venv" / ".flagadmin-installed").exists()


def test_serve_installs_for_serving__test_installs_the_test_tooling():
    serve = (REPO_ROOT / "scripts" / "serve").read_text()
    test = (REPO_ROOT / "scripts" / "test").read_text()

    assert re.findall(r"^ensure_venv.*$", serve, re.MULTILINE) == ["ensure_venv serve"]
    assert re.findall(r"^ensure_venv.*$", test, re.MULTILINE) == ["ensure_venv"]


# --- manage.py outside the virtual environment ------------------------------------------------


def test_manage__python_without_the_packages__says_what_to_do():
    # -S: no site-packages, as a system Python without Django.
    done = subprocess.run(
        [sys.executable, "-S", "manage.py", "migrate", "--noinput"],
        cwd=REPO_ROOT,
        env={**os.environ, "ENV_FILE": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"manage.py: this Python ({sys.executable}) does not have flagadmin's packages "
        "(No module named 'django').\n"
        "They are installed in the project's virtual environment, .venv. Run:\n"
        "    .venv/bin/python manage.py migrate --noinput\n"
        "or activate it first: source .venv/bin/activate && python manage.py migrate --noinput\n"
    )


def test_manage__no_venv_yet__says_how_to_make_one(monkeypatch, tmp_path):
    monkeypatch.setattr(manage, "PROJECT_DIR", tmp_path)
    monkeypatch.setattr(sys, "argv", ["manage.py", "migrate"])
    monkeypatch.setattr(sys, "executable", "/usr/bin/python3")

    message = manage.dependencies_missing(ModuleNotFoundError("No module named 'django'"))

    assert message == (
        "manage.py: this Python (/usr/bin/python3) does not have flagadmin's packages "
        "(No module named 'django').\n"
        "Install them into a virtual environment first, either by serving once:\n"
        "    scripts/serve      (creates .venv, installs, migrates, serves)\n"
        "or by hand, as any Django project:\n"
        "    python3.11 -m venv .venv && .venv/bin/pip install -e .\n"
        "    .venv/bin/python manage.py migrate"
    )


# --- the xmlsec1 warning --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enabled", "databases", "warned"),
    [
        pytest.param(False, ["default"], False, id="saml-disabled"),
        pytest.param(True, ["default"], True, id="saml-enabled"),
        pytest.param(True, None, False, id="saml-enabled-checks-without-database"),
    ],
)
def test_xmlsec1_warning__only_where_saml_is_enabled(
    db, monkeypatch, settings, enabled, databases, warned
):
    settings.SAML_XMLSEC_BINARY = None
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    SamlSettings.objects.create(enabled=enabled)

    ids = [message.id for message in xmlsec1_installed(None, databases=databases)]

    assert ids == (["auth_saml.W001"] if warned else [])


def test_xmlsec1_warning__installed__none(db, settings):
    settings.SAML_XMLSEC_BINARY = "/usr/bin/xmlsec1"
    SamlSettings.objects.create(enabled=True)

    assert xmlsec1_installed(None, databases=["default"]) == []


def test_xmlsec1_warning__once_in_scripts_serves_commands(db, monkeypatch, settings, capsys):
    # scripts/serve runs `migrate`, then `ensureadmintoken`: the second's checks have no database.
    settings.SAML_XMLSEC_BINARY = None
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    SamlSettings.objects.create(enabled=True)

    call_command("migrate", verbosity=0, skip_checks=False)
    call_command("ensureadmintoken", base_url="http://127.0.0.1:8000", skip_checks=False)

    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("auth_saml.W001") == 1


def test_scripts_serves_commands__fresh_sqlite_database__no_warning(tmp_path):
    # What scripts/serve runs before serving, on its default database.
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("INIT_", "DJANGO_", "DATABASE_"))
    }
    environment.update(
        DATABASE_URL=f"sqlite:///{tmp_path}/first.sqlite3", ENV_FILE="", SECRET_KEY="first-run"
    )
    output = ""
    for command in (
        ["migrate", "--noinput"],
        ["ensureadmintoken", "--base-url", "http://127.0.0.1:8000"],
    ):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=REPO_ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        output += done.stdout + done.stderr

    assert "Created an admin API token." in output
    assert "WARNINGS" not in output
    assert "System check identified" not in output


# --- pytest's skip reasons ------------------------------------------------------------------


def test_pytest__skip_reasons_in_the_summary():
    addopts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"
    ]["addopts"]

    assert "-rfEs" in addopts.split()  # failures and errors too, as without -r


# --- the README's Django path ---------------------------------------------------------------


def _readme_django_path() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("### Or as any Django project", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    return block.strip().splitlines()


def test_readme_django_path__ends_with_a_working_curl(tmp_path):
    commands = _readme_django_path()
    assert commands[0] == "python3.11 -m venv .venv && .venv/bin/pip install -e ."
    assert commands[-2] == ".venv/bin/python manage.py runserver &"
    assert commands[-1].startswith("curl -s http://127.0.0.1:8000/api/admin/projects ")
    if shutil.which("curl") is None or not (REPO_ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("no curl, or no .venv in this checkout")
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # As written, with this checkout's .venv (made already), a database and a port of its own,
    # and the server waited for.
    script = "\n".join(
        [
            "set -euo pipefail",
            *commands[1:-2],
            f".venv/bin/python manage.py runserver 127.0.0.1:{port} --noreload &",
            "server=$!",
            "trap 'kill $server' EXIT",
            f"for _ in $(seq 100); do curl -fs http://127.0.0.1:{port}/health >/dev/null && break;"
            " sleep 0.2; done",
            commands[-1].replace("127.0.0.1:8000", f"127.0.0.1:{port}"),
        ]
    )
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("INIT_", "DJANGO_", "DATABASE_"))
    }
    environment.update(
        DATABASE_URL=f"sqlite:///{tmp_path}/readme.sqlite3",
        ENV_FILE="",
        SECRET_KEY="readme-path-test-key",
        PATH=f"{REPO_ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
    )

    done = subprocess.run(
        ["bash", "-c", script],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert done.returncode == 0, done.stderr
    answer = done.stdout.splitlines()[-1]  # after migrate's lines
    assert answer.startswith('{"version":1,"projects":[{"favorite":false,"id":"default",')
