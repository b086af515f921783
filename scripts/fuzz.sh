#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time each (see docs/fuzzing.md).
#
#   scripts/fuzz.sh                 # every target (`cargo fuzz list`), 60 s each
#   FUZZ_SECONDS=300 scripts/fuzz.sh envelope schema
#   FUZZ_SECONDS=300 scripts/fuzz.sh json_frame   # the frame scanner (mcpwire_wire::json_frame)
#
# Works on stable Rust: `-s none` (no sanitizer) needs no nightly flags. Set
# FUZZ_SANITIZER=address on a nightly toolchain for ASan. Corpora grow in fuzz/corpus/<target>
# (not committed), findings land in fuzz/artifacts/<target>/; the script exits non-zero if
# any target found something.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-60}"
sanitizer="${FUZZ_SANITIZER:-none}"
timeout="${FUZZ_TIMEOUT:-10}"     # seconds one input may take before it counts as a hang
rss="${FUZZ_RSS_MB:-2048}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi

cargo fuzz build -s "$sanitizer" -a

failed=()
for t in "${targets[@]}"; do
    echo "== fuzz $t for ${seconds}s"
    mkdir -p "corpus/$t"
    seeds=()
    [ -d "seeds/$t" ] && seeds=("seeds/$t")
    if ! cargo fuzz run -s "$sanitizer" -a "$t" "corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss" \
        -max_len=65536 -print_final_stats=1; then
        failed+=("$t")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "findings in: ${failed[*]} (see fuzz/artifacts/)" >&2
    exit 1
fi
echo "no findings"
