#!/usr/bin/env bash
# Install Debian's Chromium for the dashboard's Playwright tests.
# Idempotent and quiet: does nothing when /usr/bin/chromium already exists.
# Playwright drives this system binary (executable_path=/usr/bin/chromium), so we never
# run `playwright install` (which downloads browsers from the network at test time).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"  # never prompt: a test run must not hang on a password
    else
        echo "install_chromium.sh: need root (or sudo) to apt-get install chromium" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null

if [ ! -x /usr/bin/chromium ]; then
    echo "install_chromium.sh: chromium was installed but /usr/bin/chromium is missing" >&2
    exit 1
fi
