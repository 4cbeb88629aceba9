# Run by scripts/_venv.sh (dev extras), beside pip: the browser tests render pages in Debian's headless Chromium.
# Installs the `chromium` package when it is missing and this shell may install packages (root, or
# passwordless sudo); otherwise it says so, and the browser tests skip naming the reason.
if ! command -v chromium >/dev/null 2>&1 && [ -z "${STREAMLET_NO_CHROMIUM_INSTALL:-}" ]; then
  _sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then _sudo="sudo -n"; else _sudo="none"; fi
  fi
  if [ "$_sudo" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "scripts/_chromium.sh: chromium is missing and cannot be installed here (needs apt-get as root)" >&2
  else
    echo "scripts/_chromium.sh: installing Debian's chromium for the browser tests" >&2
    if ! DEBIAN_FRONTEND=noninteractive $_sudo apt-get install -y -q chromium >/dev/null 2>&1; then
      $_sudo apt-get update -q >/dev/null 2>&1 || true
      DEBIAN_FRONTEND=noninteractive $_sudo apt-get install -y -q chromium >/dev/null 2>&1 \
        || echo "scripts/_chromium.sh: apt-get install chromium failed; the browser tests will skip" >&2
    fi
  fi
  unset _sudo
fi
