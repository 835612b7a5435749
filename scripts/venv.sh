# Sourced by scripts/serve, scripts/test and .ci/run: make sure .venv exists and holds the project,
# installing again only when pyproject.toml has changed since the last time or more is needed.
# `ensure_venv serve` installs what serving needs (pip install -e .); `ensure_venv` (scripts/test,
# .ci/run) adds the test tooling too (pip install -e '.[dev]'). Needs Python 3.11 with pip and
# venv; nothing else.

ensure_venv() {
    local want=${1:-dev}
    local python=${PYTHON:-}
    if [[ -z $python ]]; then
        if command -v python3.11 >/dev/null 2>&1; then python=python3.11; else python=python3; fi
    fi
    if [[ ! -x .venv/bin/python ]]; then
        echo "Creating the virtual environment in .venv ($("$python" --version 2>&1))"
        "$python" -m venv .venv
    fi
    # The stamp: pyproject.toml's digest and what was installed from it, `serve` or `dev` (a
    # digest alone, as older scripts wrote it, was `dev`). `dev` serves too.
    local stamp=.venv/.flagadmin-installed
    local digest installed_digest="" installed=""
    digest=$(.venv/bin/python -c \
        "import hashlib, sys; print(hashlib.sha256(open('pyproject.toml', 'rb').read()).hexdigest())")
    if [[ -f $stamp ]]; then
        read -r installed_digest installed <"$stamp" || true
        installed=${installed:-dev}
    fi
    if [[ $installed_digest == "$digest" && ($installed == "$want" || $installed == dev) ]]; then
        return
    fi
    local spec=. what="flagadmin and what it needs to serve"
    if [[ $want == dev ]]; then
        spec=.[dev]
        what="flagadmin, what it needs to serve, and the test tooling"
    fi
    echo "Installing ${what} into .venv (pip install -e '${spec}')."
    if [[ -z $installed_digest ]]; then
        echo "A first install downloads every package: a minute or two. pip's progress follows."
    fi
    _pip_install --upgrade pip || return 1
    _pip_install -e "$spec" || return 1
    echo "$digest $want" >"$stamp"
    echo "Installed into .venv."
}

# pip install, its lines shown indented as they come (what it collects and downloads); pip's
# status. Dropped: the packages already there, and the warning that some machines' pip
# configuration gives for each absent local index, which says nothing about this project.
_pip_install() {
    .venv/bin/python -m pip install --disable-pip-version-check "$@" 2>&1 | {
        local line
        while IFS= read -r line; do
            case $line in
            "Requirement already satisfied"* | "WARNING: Location 'file:"*) ;;
            *) printf '    %s\n' "${line% (from *}" ;; # not the chain that asked for it
            esac
        done
    }
    return "${PIPESTATUS[0]}"
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
