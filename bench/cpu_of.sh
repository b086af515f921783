#!/usr/bin/env bash
# Runs COMMAND and, when stopped (SIGTERM or SIGINT), writes the user + system CPU seconds
# it used (all its threads, from /proc/PID/stat) to OUT before stopping it: a wrapper for
# load drivers that start their servers themselves (httpload), so CPU per call can be read
# without a profiler (OUT.split: user and system seconds apart). The CPU its running children used (a gateway's stdio upstreams) goes
# to OUT.kids.
#
#   bench/cpu_of.sh OUT COMMAND [ARG...]
set -euo pipefail
out=$1
shift
"$@" &
pid=$!
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
stop() {
    proc_cpu "$pid" > "$out" 2>/dev/null || true
    proc_cpu_split "$pid" > "$out.split" 2>/dev/null || true
    kids_cpu "$pid" > "$out.kids" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    exit 0
}
trap stop TERM INT
wait "$pid"
