#!/usr/bin/env bash
# Everything `make test` builds and lints, in two lanes run at once:
#   host: rustfmt --check and clippy, then the workspace's binaries and test targets (debug);
#   sam:  cfn-lint and sam validate --lint, then `sam build` of infra/template.yaml (SAM's debug
#         mode, arm64, into target/sam-debug) and a check of the binaries it made.
# Each lane spends minutes compiling aws-sdk-sagemaker, a single crate on one core; side by side
# they keep both cores busy. The sam lane's output goes to a log, shown when it fails.
set -uo pipefail
cd "$(dirname "$0")/.."
make="${MAKE:-make} --no-print-directory"
log=target/sam-debug/build.log
mkdir -p target/sam-debug

# On a fresh machine, say what is missing before either lane trips over it.
scripts/bootstrap.sh --check || exit 1

# A full disk otherwise fails minutes in, deep in rustc ("No space left on device"). A clean
# build writes about 8 GB under the target directory (the debug build and its test targets, the
# arm64 SAM build); a rebuild over an earlier one, far less.
target_dir=${CARGO_TARGET_DIR:-target}
need_gb=8
[ -d "$target_dir/debug/deps" ] && need_gb=3
free_gb=$(df -Pk "$target_dir" | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "${free_gb:-0}" -lt "$need_gb" ]; then
    echo "error: make test needs about $need_gb GB free for its build under $target_dir/;" \
        "the disk holding it has $free_gb GB free (free some space, or set CARGO_TARGET_DIR" \
        "to a directory on a larger disk)" >&2
    exit 1
fi

start=$SECONDS
# The sam lane runs in its own process group, so that stopping this script stops all of it
# (make, sam, cargo and rustc under it).
setsid $make sam-build-debug >"$log" 2>&1 &
sam_pid=$!
stop_sam_lane() { kill -TERM -- "-$sam_pid" 2>/dev/null; }
trap stop_sam_lane INT TERM

$make compile
host=$?
echo "host lane (lint, build, test targets) ended after $((SECONDS - start)) s"
if [ "$host" -ne 0 ]; then
    # The run has failed already: say so now rather than after minutes of the sam build.
    stop_sam_lane
    wait "$sam_pid"
    echo "error: the host lane failed (see above); the sam lane was stopped" >&2
    exit 1
fi
if kill -0 "$sam_pid" 2>/dev/null; then
    echo "waiting for the sam build lane (log: $log)..."
fi
wait "$sam_pid"
sam=$?

if [ "$sam" -ne 0 ]; then
    echo "---- $log (last 60 lines) ----"
    tail -n 60 "$log"
    echo "error: the sam lane failed (cfn-lint, sam validate, sam build or the artifact check); full log: $log" >&2
    exit 1
fi
grep -E '^  [A-Za-z]+Function: ' "$log"
echo "sam lane (venv, infra lint, sam build debug arm64) passed; both lanes took $((SECONDS - start)) s"
