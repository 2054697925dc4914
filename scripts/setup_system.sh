#!/usr/bin/env bash
# Installs the Debian packages listed in scripts/system_packages.txt. Needs
# root; without root it prints the one apt-get line to run instead.
# (`deno task test` and `deno task bench` do the same by themselves.)
set -euo pipefail
cd "$(dirname "$0")"

mapfile -t PACKAGES < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' system_packages.txt)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "system packages: all present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "missing packages; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "system packages: installed ${missing[*]}"
