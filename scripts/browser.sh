#!/usr/bin/env bash
# Install Debian's Chromium for the Playwright tests when it is missing (Playwright cannot download
# its own browsers here). Idempotent.
set -euo pipefail

if [ ! -x /usr/bin/chromium ]; then
  command -v apt-get >/dev/null || { echo "browser: cannot install chromium (no apt-get)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }
fi
echo "browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) at /usr/bin/chromium"
