#!/usr/bin/env bash
# Load benchmark of `syspilot serve`: requests/s and p50/p99 latency with wrk at 1, 16 and 64
# connections, for GET /healthz and GET /v1/libraries/{lib}/contracts/{version} (authenticated).
# Usage: scripts/service-bench.sh [SECONDS_PER_RUN]   (BUILD_DIR selects the build, default build/)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
secs=${1:-10}
bin="$build/syspilot"
command -v wrk >/dev/null || { echo "service-bench: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[ -x "$bin" ] || { echo "service-bench: $bin not built (bash scripts/build.sh)" >&2; exit 2; }

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# A small library release to synthesize a contract from.
mkdir -p "$work/root/foo-1.0.0/src"
cat > "$work/root/foo-1.0.0/src/foo.c" <<'EOC'
#include <stdlib.h>
#include <pthread.h>
int foo_threads(void) { const char* s = getenv("FOO_NUM_THREADS"); return s ? atoi(s) : 4; }
static void* run(void* a) { return a; }
void foo_start(void) { pthread_t t; pthread_create(&t, 0, run, 0); }
EOC
db="$work/db.sqlite"
token=$("$bin" serve token create --scope write --db "$db" 2>/dev/null)

"$bin" serve --db "$db" --port 0 --source-root "$work/root" --work-dir "$work/cache" > "$work/serve.out" 2>"$work/serve.err" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/serve.out")
[ -n "$port" ] || { echo "service-bench: server did not start" >&2; cat "$work/serve.err" >&2; exit 1; }
base="http://127.0.0.1:$port"

# Store one contract through the API (python3's urllib: no extra client needed).
python3 - "$base" "$token" "$work/root/foo-1.0.0" <<'EOP' || { echo "service-bench: synthesis failed" >&2; exit 1; }
import json, sys, time, urllib.request
base, token, path = sys.argv[1:]
hdr = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
body = json.dumps({"library": "foo", "version": "1.0.0", "source": {"kind": "dir", "path": path}}).encode()
job = json.load(urllib.request.urlopen(urllib.request.Request(base + "/v1/synthesize", body, hdr)))["job"]["id"]
for _ in range(600):
    state = json.load(urllib.request.urlopen(urllib.request.Request(base + "/v1/jobs/" + job, None, hdr)))["job"]["state"]
    if state == "succeeded": sys.exit(0)
    if state in ("failed", "cancelled"): sys.exit(1)
    time.sleep(0.2)
sys.exit(1)
EOP

# wrk reports latency percentiles with --latency; pick requests/s, p50 and p99.
run() {  # NAME PATH CONNECTIONS
  local threads=$(( $3 < 2 ? 1 : 2 ))
  local out
  out=$(wrk -t"$threads" -c"$3" -d"${secs}s" --latency -H "Authorization: Bearer $token" "$base$2")
  local rps p50 p99 errs
  rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
  p50=$(awk '$1=="50%"{print $2}' <<<"$out")
  p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  errs=$(awk '/Non-2xx|Socket errors/{printf "%s ", $0}' <<<"$out")
  printf "| %-9s | %3d | %10s | %9s | %9s | %s\n" "$1" "$3" "$rps" "$p50" "$p99" "${errs:-}"
}
# Other work on the machine shows in the figures: print the load average around the runs.
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
echo "syspilot serve load benchmark: $(nproc) CPUs, ${secs} s per run, wrk $(wrk -v 2>&1 | awk 'NR==1{print $2}')"
echo "load average before: $(loadavg)"
echo "| endpoint  | conns | req/s | p50 | p99 | errors"
echo "|---|---|---|---|---|---|"
for c in 1 16 64; do
  run healthz /healthz "$c"
  run contract /v1/libraries/foo/contracts/1.0.0 "$c"
done
echo "load average after: $(loadavg)"
