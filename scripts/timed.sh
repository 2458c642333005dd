#!/usr/bin/env bash
# Runs a command and says how long it took, passed or not, so that `make test` shows where its
# time goes: `scripts/timed.sh "<what>" <command> [args...]`.
set -uo pipefail
what=$1
shift
start=$SECONDS
"$@"
status=$?
echo "time: $what took $((SECONDS - start)) s$([ "$status" -eq 0 ] || echo " (failed, exit $status)")"
exit "$status"
