#!/usr/bin/env bash
# Install the Debian packages imgbench uses, when they are missing.
# As root: apt-get installs them. Otherwise: print the exact command and go on with what is here.
set -euo pipefail
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "imgbench: no apt-get here; install the equivalents of: ${missing[*]} (cases that need them will be skipped)" >&2
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "imgbench: not root; run this, then make again (cases that need them are skipped meanwhile):" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 0
fi
echo "imgbench: apt-get install ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
