#!/usr/bin/env bash
# Runs `cargo test` with the given arguments, then prints one closing line with the totals
# over every test binary ("tests: N passed, N failed"), so the outcome is plain at the end of
# a long log. Exits with cargo's status.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
