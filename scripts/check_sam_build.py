"""Checks what `sam build` produced: every function of the built template has a `bootstrap` that
is an executable ELF for the function's architecture (arm64 unless the template says otherwise).

Usage: check_sam_build.py BUILD_DIR   (the --build-dir of `sam build`; .aws-sam/build by default)
"""

import os
import struct
import sys
from pathlib import Path

from cfnlint.decode import decode

# ELF e_machine values, by the Lambda architecture names.
MACHINES = {"arm64": 183, "x86_64": 62}


def elf_machine(path: Path) -> int:
    with path.open("rb") as f:  # the header only, not tens of MB of binary
        header = f.read(20)
    if len(header) < 20 or header[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    if header[4] != 2 or header[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    return struct.unpack_from("<H", header, 18)[0]


def check(build_dir: Path) -> list[str]:
    template, matches = decode(str(build_dir / "template.yaml"))
    if matches or template is None:
        return [f"{build_dir / 'template.yaml'} does not decode: {matches}"]
    resources = template.get("Resources", {})
    global_arch = template.get("Globals", {}).get("Function", {}).get("Architectures", ["x86_64"])
    functions = {
        name: r["Properties"] for name, r in resources.items() if r.get("Type") == "AWS::Serverless::Function"
    }
    if not functions:
        return ["the built template has no AWS::Serverless::Function"]
    problems = []
    for name, props in sorted(functions.items()):
        arch = props.get("Architectures", global_arch)[0]
        code_uri = props.get("CodeUri")
        if not isinstance(code_uri, str):
            problems.append(f"{name}: CodeUri is {code_uri!r}, not a built directory")
            continue
        bootstrap = build_dir / code_uri / "bootstrap"
        if not bootstrap.is_file():
            problems.append(f"{name}: {bootstrap} is missing")
            continue
        if not os.access(bootstrap, os.X_OK):
            problems.append(f"{name}: {bootstrap} is not executable")
        try:
            machine = elf_machine(bootstrap)
        except ValueError as e:
            problems.append(f"{name}: {bootstrap}: {e}")
            continue
        if machine != MACHINES[arch]:
            problems.append(f"{name}: {bootstrap} is built for ELF machine {machine}, not {arch}")
        else:
            size = bootstrap.stat().st_size / 1e6
            print(f"  {name}: {bootstrap.relative_to(build_dir)} ({arch}, {size:.1f} MB)")
    return problems


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(Path(sys.argv[1]))
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
