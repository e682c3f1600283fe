#!/usr/bin/env bash
# deps.sh -- install what mtrace needs to build and test, on Debian.
#   --check-or-install   install only if something is missing (fast path)
#   --install            always run apt-get install for the full list
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential pkg-config clang libclang-rt-14-dev clang-format
      libbson-dev libmongoc-dev libpcap-dev libzstd-dev libcmocka-dev
      zlib1g-dev libsnappy-dev libssl-dev libidn-dev zstd
      python3 python3-pymongo python3-mockupdb python3-zstandard python3-snappy
      tshark jq gnuplot-nox fonts-liberation
      haproxy socat openssl procps iproute2 libcap2-bin groff-base)

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

# The Node.js driver for the integration tests and its compressors, from
# tests/integration/package.json: snappy@7 comes prebuilt from the npm
# registry.  @mongodb-js/zstd's install script fetches a prebuilt addon,
# or zstd's sources, from github.com, which this machine cannot reach: the
# packages are installed with --ignore-scripts (none of the others has an
# install script) and its addon is compiled here from the package's own
# sources against Debian's libzstd and Node's headers, as its binding.gyp
# does (C++17, exceptions, ZSTD_STATIC_LINKING_ONLY; lib/index.js loads
# build/Release/zstd.node).
NM=tests/integration/node_modules
if [ ! -d $NM/mongodb ] || [ ! -d $NM/snappy ] || [ ! -d $NM/@mongodb-js/zstd ]; then
    echo "deps: npm install mongodb@6 snappy@7 @mongodb-js/zstd@2 (tests/integration)" >&2
    (cd tests/integration && npm install --no-audit --no-fund --silent --ignore-scripts >/dev/null)
fi
ZSTD_NODE=$NM/@mongodb-js/zstd/build/Release/zstd.node
if [ ! -f $ZSTD_NODE ]; then
    echo "deps: building $ZSTD_NODE (Debian's libzstd)" >&2
    node_inc=$(dirname "$(command -v node)")/../include/node
    mkdir -p "$(dirname $ZSTD_NODE)"
    (cd $NM/@mongodb-js/zstd &&
        c++ -std=c++17 -O2 -shared -fPIC -DZSTD_STATIC_LINKING_ONLY \
            -DNAPI_CPP_EXCEPTIONS -I ../../node-addon-api -I "$node_inc" \
            addon/zstd.cpp addon/compression.cpp -lzstd \
            -o build/Release/zstd.node.tmp &&
        mv build/Release/zstd.node.tmp build/Release/zstd.node)
fi
