#!/usr/bin/env bash
# Runs COMMAND and, when stopped (SIGTERM or SIGINT), writes the user + system CPU seconds
# it used (all its threads, from /proc/PID/stat) to OUT before stopping it: a wrapper for
# load drivers that start their servers themselves (httpload), so CPU per call can be read
# without a profiler.
#
#   bench/cpu_of.sh OUT COMMAND [ARG...]
set -euo pipefail
out=$1
shift
"$@" &
pid=$!
cpu() { # user + system seconds of $1, from the fields after the command name
    local ticks
    ticks=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat")
    awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.4f\n", t / hz }'
}
stop() {
    cpu "$pid" > "$out" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    exit 0
}
trap stop TERM INT
wait "$pid"
