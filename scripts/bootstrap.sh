#!/usr/bin/env bash
# Creates (or refreshes) the project-local virtualenv with the pinned local tooling:
# moto (the AWS emulator), boto3 (to set it up), cargo-lambda and zig (to run and build the
# functions). Re-runs only when requirements-dev.txt changes. With --check, only checks that what
# it needs (cargo, Python 3.9+) is installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
req="$root/scripts/requirements-dev.txt"
stamp="$venv/.requirements.stamp"

need() {
    command -v "$1" >/dev/null 2>&1 || { echo "error: '$1' is not installed. $2" >&2; exit 1; }
}
need cargo "Install Rust with rustup (https://rustup.rs), then run this again."
need python3 "Install Python 3.9 or newer (with the venv module), then run this again."
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' \
    || { echo "error: Python 3.9 or newer is needed; found $(python3 --version 2>&1)." >&2; exit 1; }

[ "${1:-}" = "--check" ] && exit 0

if [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
    exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
        echo "error: 'python3 -m venv' failed. On Debian/Ubuntu: apt-get install python3-venv" >&2
        exit 1
    }
fi
echo "Installing local tooling into .venv (moto, boto3, cargo-lambda, zig)..."
# --no-compile: byte-compiling all of botocore and SAM CLI up front costs half a minute; Python
# compiles what is actually imported, once, on first use.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile -r "$req"
cp "$req" "$stamp"
