# Sourced by scripts/test and scripts/demo: create .venv and install streamlet with the given extras.
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${STREAMLET_VENV:-$ROOT/.venv}"
EXTRAS="${1:-dev}"
PY="${PYTHON:-python3}"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "streamlet needs Python 3.11+")'
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.streamlet-installed-$EXTRAS"
# the install builds the C extensions and the mypyc-compiled modules too: rebuild when one of their sources changed
stale_build() {
  [ ! -f "$STAMP" ] && return 0
  local source
  for source in "$ROOT/pyproject.toml" "$ROOT/setup.py" "$ROOT/streamlet/_compiled.py" "$ROOT"/streamlet/_native/*.c $("$PY" "$ROOT/streamlet/_compiled.py"); do
    [ "$source" -nt "$STAMP" ] && return 0
  done
  return 1
}
# the browser tests' Chromium installs (when missing) while the packages install: both mostly wait on downloads
chromium_pid=""
case ",$EXTRAS," in
  *,dev,*) bash "$ROOT/scripts/_chromium.sh" & chromium_pid=$! ;;
esac
# uv (pinned: a new release must not change an install on a day nothing else did) resolves, downloads, builds and
# unpacks in parallel: streamlet's extensions and PySpark's wheel (an sdist: 450 MB of jars zipped) build at once.
# A cold install took 35 s with it, 60 s with pip, which installs when uv cannot be had. Both compile the bytecode.
UV_VERSION="0.13.9"
uv_install() {
  # pip's settings from the environment, as uv names them (uv reads no pip configuration)
  [ -n "${PIP_FIND_LINKS:-}" ] && export UV_FIND_LINKS="${UV_FIND_LINKS:-$PIP_FIND_LINKS}"
  [ -n "${PIP_INDEX_URL:-}" ] && export UV_INDEX_URL="${UV_INDEX_URL:-$PIP_INDEX_URL}"
  [ -n "${PIP_CERT:-}" ] && export SSL_CERT_FILE="${SSL_CERT_FILE:-$PIP_CERT}"
  [ -n "${PIP_DEFAULT_TIMEOUT:-}" ] && export UV_HTTP_TIMEOUT="${UV_HTTP_TIMEOUT:-$PIP_DEFAULT_TIMEOUT}"
  "$VENV/bin/python" -m pip install -q "uv==$UV_VERSION" &&
    "$VENV/bin/uv" pip install -q --compile-bytecode --python "$VENV/bin/python" -e "$ROOT[$EXTRAS]"
}
if stale_build; then
  if ! (uv_install); then
    echo "scripts/_venv.sh: installing with uv failed; pip installs instead" >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e "$ROOT[$EXTRAS]"
  fi
  touch "$STAMP"
fi
if [ -n "$chromium_pid" ]; then
  wait "$chromium_pid"
fi
export PATH="$VENV/bin:$PATH"
