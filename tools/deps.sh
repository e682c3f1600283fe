#!/usr/bin/env bash
# deps.sh -- install what mtrace needs to build and test, on Debian.
#   --check-or-install   install only if something is missing (fast path)
#   --install            always run apt-get install for the full list
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential pkg-config clang libclang-rt-14-dev clang-format
      libbson-dev libmongoc-dev libpcap-dev libzstd-dev libcmocka-dev
      zlib1g-dev libsnappy-dev zstd
      python3 python3-pymongo python3-mockupdb python3-zstandard python3-snappy
      tshark jq gnuplot-nox fonts-liberation
      haproxy socat procps iproute2 libcap2-bin groff-base)

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
# Node.js and npm may come from Debian or from another packaging; only the
# commands matter.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ "${1:-}" = "--install" ] || [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "deps: missing packages: ${missing[*]}; run 'sudo make deps'" >&2
        exit 1
    fi
    echo "deps: installing ${missing[*]:-${PKGS[*]}}" >&2
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]:-${PKGS[@]}}" >/dev/null
fi

# The Node.js driver for the integration tests, and its snappy compressor
# (prebuilt from the npm registry; its zstd one needs github.com), from
# tests/integration/package.json.
if [ ! -d tests/integration/node_modules/mongodb ] ||
    [ ! -d tests/integration/node_modules/snappy ]; then
    echo "deps: npm install mongodb@6 snappy@7 (tests/integration)" >&2
    (cd tests/integration && npm install --no-audit --no-fund --silent >/dev/null)
fi
