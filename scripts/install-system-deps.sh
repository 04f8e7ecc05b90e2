#!/usr/bin/env bash
# Installs the Debian packages the tests need (headless Chromium for the dashboard test) when
# they are missing. Needs root (as on CI and the dev machines); elsewhere it says what to install.
set -euo pipefail

packages=()
command -v chromium >/dev/null 2>&1 || packages+=(chromium)

if [ "${#packages[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: please install: ${packages[*]} (needs root)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "install-system-deps: installed ${packages[*]}"
