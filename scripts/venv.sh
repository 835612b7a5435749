# Sourced by scripts/serve, scripts/test and .ci/run: make sure .venv exists and holds the project
# with its dev extras, installing again only when pyproject.toml has changed since the last time.
# Needs Python 3.11 with pip and venv; nothing else.

ensure_venv() {
    local python=${PYTHON:-}
    if [[ -z $python ]]; then
        if command -v python3.11 >/dev/null 2>&1; then python=python3.11; else python=python3; fi
    fi
    if [[ ! -x .venv/bin/python ]]; then
        echo "Creating the virtual environment in .venv ($("$python" --version 2>&1))"
        "$python" -m venv .venv
    fi
    local stamp=.venv/.flagadmin-installed
    local want
    want=$(.venv/bin/python -c \
        "import hashlib, sys; print(hashlib.sha256(open('pyproject.toml', 'rb').read()).hexdigest())")
    if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
        echo "Installing flagadmin and its dependencies into .venv (pip install -e '.[dev]')"
        # (Some machines' pip configuration names local indexes that may be absent; pip's
        # warning for each package says nothing about this project, so it is dropped.)
        .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip \
            2> >(grep -v "^WARNING: Location 'file:" >&2)
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' \
            2> >(grep -v "^WARNING: Location 'file:" >&2)
        echo "$want" >"$stamp"
    fi
}

# nginx for the production stack (flagadmin.serving): Debian's package, installed with apt-get
# when missing (as root, or through sudo).
ensure_nginx() {
    if command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]]; then
        return
    fi
    local sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null 2>&1 || {
            echo "nginx is missing; install it (apt-get install nginx) or run as root" >&2
            return 1
        }
        sudo=(sudo)
    fi
    echo "Installing nginx (apt-get install nginx) for the production stack"
    "${sudo[@]}" apt-get update -qq
    # flagadmin.serving runs nginx with a configuration of its own and never uses the package's
    # service (which Debian may start on port 80 where services run).
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq nginx >/dev/null
}
