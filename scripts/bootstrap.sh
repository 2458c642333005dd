#!/usr/bin/env bash
# Creates (or refreshes) the project-local virtualenv with the pinned local tooling:
# moto (the AWS emulator), boto3 (to set it up), cargo-lambda and zig (to run and build the
# functions), SAM CLI and cfn-lint. Re-runs only when requirements-dev.txt changes.
#
# First it checks what has to be on the machine already and names everything that is missing,
# so that no build starts only to fail minutes later:
#   scripts/bootstrap.sh          what `make demo` and `make serve` need, then the venv;
#   scripts/bootstrap.sh --check  what `make test` needs (also setsid, rustfmt, clippy and the
#                                 arm64 target), and nothing else.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
req="$root/scripts/requirements-dev.txt"
stamp="$venv/.requirements.stamp"

for_tests=false
[ "${1:-}" = "--check" ] && for_tests=true

missing=()
lack() { missing+=("$1"); }
have() { command -v "$1" >/dev/null 2>&1; }

# Every pinned wheel of requirements-dev.txt needs Python 3.10 or newer.
if ! have python3; then
    lack "Python 3.10 or newer (python3): install it with its venv module"
elif ! python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
    found=$(python3 --version 2>/dev/null || true)
    lack "Python 3.10 or newer: python3 is ${found:-there but does not run}"
elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    lack "Python's venv module (with ensurepip): on Debian/Ubuntu, apt-get install python3-venv"
fi

# The locked dependencies declare the Rust they need; Cargo.toml's rust-version says which.
msrv=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' "$root/Cargo.toml" | head -n 1)
if ! have cargo || ! have rustc; then
    lack "Rust (cargo and rustc${msrv:+, $msrv or newer}): install it with rustup, https://rustup.rs"
elif [ -n "$msrv" ]; then
    found=$(rustc --version | awk '{print $2}')
    if [ "$(printf '%s\n%s\n' "$msrv" "${found%%-*}" | sort -V | head -n 1)" != "$msrv" ]; then
        lack "Rust $msrv or newer: found rustc $found (rustup update stable)"
    fi
fi
# aws-lc-sys and ring compile C for this machine (zig, from the venv, cross-compiles for arm64).
if ! have cc && ! have gcc && ! have clang; then
    lack "a C toolchain (cc, gcc or clang): on Debian/Ubuntu, apt-get install build-essential"
fi
have make || lack "make: on Debian/Ubuntu, apt-get install make"

if $for_tests; then
    # scripts/build_for_tests.sh runs its second build lane in a process group of its own.
    have setsid || lack "setsid (util-linux): on Debian/Ubuntu, apt-get install util-linux"
    have awk || lack "awk (scripts/cargo_test_summary.sh counts the tests with it)"
    if have cargo; then
        cargo fmt --version >/dev/null 2>&1 || lack "rustfmt: rustup component add rustfmt"
        { cargo clippy --version >/dev/null 2>&1 || have clippy-driver; } || lack "clippy: rustup component add clippy"
    fi
    # sam build cross-compiles for Lambda (arm64); make adds the target with rustup when absent.
    if ! have rustup && ! { have rustc && [ -d "$(rustc --print sysroot)/lib/rustlib/aarch64-unknown-linux-gnu" ]; }; then
        lack "the Rust target aarch64-unknown-linux-gnu, or rustup to add it (rustup target add aarch64-unknown-linux-gnu)"
    fi
fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "error: this machine lacks what the build needs:" >&2
    printf '  - %s\n' "${missing[@]}" >&2
    echo "Install these, then run this again." >&2
    exit 1
fi

$for_tests && exit 0

if [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
    exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
        echo "error: 'python3 -m venv' failed. On Debian/Ubuntu: apt-get install python3-venv" >&2
        exit 1
    }
fi
echo "Installing local tooling into .venv (moto, boto3, cargo-lambda, zig, SAM CLI, cfn-lint)..."
# --no-compile: byte-compiling all of botocore and SAM CLI up front costs half a minute; Python
# compiles what is actually imported, once, on first use.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile -r "$req"
cp "$req" "$stamp"
