#!/usr/bin/env bash
# Installs the Debian packages sbilab's native code and tests use. Needs root;
# without root it prints the one apt-get line to run instead.
set -euo pipefail

PACKAGES=(
  gcc make pkg-config                                   # native build
  libngtcp2-dev libngtcp2-crypto-gnutls-dev             # QUIC (ngtcp2 0.12, GnuTLS crypto)
  libnghttp3-dev libgnutls28-dev                        # HTTP/3 (nghttp3 0.8), TLS 1.3
  libnghttp2-dev                                        # native HTTP/2 client (nghttp2 1.52)
  nghttp2-client nghttp2-server curl                    # HTTP/2 peers: nghttp, h2load, nghttpd, curl
  ngtcp2-client ngtcp2-server                           # HTTP/3 peers: gtlsclient, gtlsserver
  valgrind                                              # leak check of the native shim
  iproute2                                              # network namespaces for the link emulator
  chromium                                              # headless check of the HTML report
)
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
