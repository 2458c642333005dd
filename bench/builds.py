"""The release builds: where they are, and what is measured of them without the stack: each
zip's size, the criterion benchmark of the handler's CPU, the entropy probe (bench/entropy)."""

from __future__ import annotations

import json
import os
import statistics
import struct
import subprocess
import zipfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where cargo (and cargo lambda) build: CARGO_TARGET_DIR when set, relative to the workspace.
TARGET = ROOT / os.environ.get("CARGO_TARGET_DIR", "target")
RELEASE = TARGET / "release"
LAMBDA_ZIPS = TARGET / "lambda"
FUNCTIONS = ["notification-handler", "pipeline-router", "mcp-tools", "gateway-target", "event-delivery"]
# The empty Rust Lambdas (bench/empty-function): the floors of init.
FLOOR_BINS = ["empty-buffered", "empty-streaming", "empty-sdk"]


def criterion() -> dict:
    """Handler CPU per notification, no I/O: the criterion benchmark in shared/usecases/benches."""
    subprocess.run(["cargo", "bench", "--locked", "-p", "usecases", "--bench", "notification", "--",
                    "--warm-up-time", "1", "--measurement-time", "3"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    out = {}
    for estimates in (TARGET / "criterion").glob("*/new/estimates.json"):
        name = json.loads((estimates.parent / "benchmark.json").read_text())["title"]
        out[name] = json.loads(estimates.read_text())["median"]["point_estimate"] / 1000
    return out


def entropy(runs: int = 5) -> dict:
    """The first random bytes of a process from aws-lc (bench/entropy), built with and without
    CPU jitter entropy: median microseconds of the first and the second request."""
    out = {}
    for label, build in (("with jitter entropy", "entropy-jitter"), ("without (as built here)", "entropy-no-jitter")):
        binary = ROOT / "target" / build / "release" / "entropy-probe"
        if not binary.exists():
            continue
        samples = [tuple(map(int, subprocess.run([str(binary)], capture_output=True, text=True, check=True)
                             .stdout.split())) for _ in range(runs)]
        out[label] = (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))
    return out


def built_zips() -> dict[str, Path]:
    """Each function's zip that `cargo lambda build` has made, by function."""
    paths = {fn: LAMBDA_ZIPS / fn / "bootstrap.zip" for fn in FUNCTIONS}
    return {fn: path for fn, path in paths.items() if path.exists()}


def sizes() -> dict:
    """Each zip's size and its binary's, in MB."""
    out = {}
    for fn, path in built_zips().items():
        with zipfile.ZipFile(path) as z:
            unzipped = sum(i.file_size for i in z.infolist())
        out[fn] = (path.stat().st_size / 1e6, unzipped / 1e6)
    return out


def zip_parts() -> dict[str, dict[str, float]]:
    """Where each zip's bytes go: its binary's parts, each deflated alone (MB)."""
    out = {}
    for fn, path in built_zips().items():
        with zipfile.ZipFile(path) as z:
            out[fn] = elf_parts(z.read("bootstrap"))
    return out


# An ELF section's part: what it is for, in the words BENCHMARKS.md uses.
PARTS = {".text": "code", ".eh_frame": "unwind tables", ".eh_frame_hdr": "unwind tables",
         ".gcc_except_table": "unwind tables", ".rela.dyn": "relocations", ".rodata": "constants"}
PART_NAMES = ["code", "unwind tables", "relocations", "constants", "the rest"]


def elf_parts(elf: bytes) -> dict[str, float]:
    """A 64-bit little-endian ELF's sections, grouped by PARTS and each deflated alone as a zip
    deflates (level 6), in MB. Their sum is within a few KB of the whole file deflated: the
    sections are the file, and deflate's window is 32 KB."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    parts = dict.fromkeys(PART_NAMES, 0.0)
    spans = []
    for name_at, kind, _, _, offset, size, *_ in headers:
        if kind == 8 or size == 0:  # SHT_NOBITS (.bss): nothing in the file
            continue
        name = elf[names + name_at:elf.index(b"\0", names + name_at)].decode()
        parts[PARTS.get(name, "the rest")] += len(zlib.compress(elf[offset:offset + size], 6)) / 1e6
        spans.append((offset, offset + size))
    # What no section holds (the ELF and program headers, the section table, padding): the rest.
    gaps, at = bytearray(), 0
    for start, end in sorted(spans):
        gaps += elf[at:start]  # empty where sections overlap
        at = max(at, end)
    gaps += elf[at:]
    parts["the rest"] += len(zlib.compress(bytes(gaps), 6)) / 1e6
    return parts
