#!/usr/bin/env bash
# Install Debian's Chromium for the browser tests (Playwright drives /usr/bin/chromium; its own
# browser downloads cannot be reached here). Idempotent: does nothing when it is installed.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) is installed"
  exit 0
fi
command -v apt-get >/dev/null || { echo "browser: cannot install chromium (no apt-get)" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null \
  || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }
echo "browser: $(/usr/bin/chromium --version) installed"
