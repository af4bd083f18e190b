# Shared helpers for the scripts (sourced, not run).

# Install Debian packages (root, or sudo without a password).
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}

# Install Debian packages when a command is missing.
ensure_command() {
  local command=$1; shift
  command -v "$command" >/dev/null 2>&1 && return 0
  echo "installing $* (for $command)" >&2
  apt_install "$@"
}

# Install Debian packages that are not installed yet (for those that bring no command, such as fonts).
ensure_packages() {
  local missing=() package
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "installing ${missing[*]}" >&2
  apt_install "${missing[@]}"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A virtualenv in .venv with the project installed (extras in $1, e.g. "[test]"). The install is editable, so only
# a change to pyproject.toml (dependencies, packages, entry points) or other extras call for pip again.
ensure_venv() {
  local extras=${1:-} stamp=.venv/.changeops-installed wanted
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv >&2 || { ensure_command false python3-venv; python3 -m venv .venv >&2; }
  fi
  wanted="$(sha256sum pyproject.toml | cut -d' ' -f1) ${extras}"
  if [ -f "$stamp" ] && { [ "$(cat "$stamp")" = "$wanted" ] || { [ -z "$extras" ] && grep -q "^${wanted% } " "$stamp"; }; }; then
    return 0
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".${extras}" >&2
  echo "$wanted" > "$stamp"
}
