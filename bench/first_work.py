"""The work of a first invocation, in instructions: each function in a fresh process under
callgrind, its count dumped when it asks for its first event, at its first answer and at each
next event's answer. Unlike CPU time, an instruction count moves by a few percent at most from
run to run, with the data, whatever else the machine does, and it holds only the work: a first
invocation's CPU time also holds the first touch of its pages and the CPU's cold caches, which no
work moved into init removes."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from cold import NEXT_EVENTS, cold_run, first_events
from emulator import Emulator
from functions import Functions
from processes import Function

VALGRIND = ("valgrind", "callgrind_control")


def missing_tools() -> list[str]:
    """What of valgrind this machine lacks (Debian's package valgrind has both)."""
    return [tool for tool in VALGRIND if shutil.which(tool) is None]


def under_callgrind(fn: Function, out: Path) -> Function:
    """`fn` run by callgrind, each dump of its counts a file `out`/cg.<pid>.<n>."""
    command = ["valgrind", "--tool=callgrind", "--vgdb=yes", f"--callgrind-out-file={out}/cg.%p", *fn.command]
    return Function(fn.name, command, fn.env, fn.logs.with_suffix(".callgrind.log"))


def dumper(pids: list[int]):
    """What cold.py calls where it reads the process's CPU (at its first `next` and at each
    answer): has callgrind write the counts since its last dump, and zero them; 0 for the CPU."""
    def dump(proc) -> int:
        pids.append(proc.pid)
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], capture_output=True, check=True, timeout=120)
        return 0
    return dump


def dumped_counts(out: Path, pid: int) -> list[int]:
    """The instructions of each dump, in order: `summary:` is each dump's total."""
    counts = []
    n = 1
    while (path := out / f"cg.{pid}.{n}").exists():
        summary = next(line for line in path.read_text().splitlines() if line.startswith("summary:"))
        counts.append(int(summary.split()[1]))
        n += 1
    return counts


def work_of(counts: list[int]) -> dict:
    """Init, the first invocation and the mean next event, from a cold process's dumps (at its
    first `next`, then at each answer)."""
    if len(counts) < 3:
        raise ValueError(f"{len(counts)} dumps: a cold start with a next event has at least 3")
    init, first, *later = counts
    return {"init": init, "first": first, "next": statistics.fmean(later)}


def first_work(emulator: Emulator, fns: Functions, runs: int, fresh, output: str) -> dict[str, list[dict]]:
    """`runs` cold starts of each function under callgrind, each with cold.py's first event and
    NEXT_EVENTS more: their work by function."""
    found: dict[str, list[dict]] = {}
    for name, event in first_events(fresh, output).items():
        found[name] = []
        for i in range(runs):
            with tempfile.TemporaryDirectory(prefix="callgrind-") as tmp:
                out, pids = Path(tmp), []
                then = [event(i * 100 + k) for k in range(1, NEXT_EVENTS + 1)]
                cold_run(under_callgrind(fns.rust[name], out), emulator, *event(i), False, then=then,
                         read_cpu_ns=dumper(pids))
                found[name].append(work_of(dumped_counts(out, pids[0])))
    return found
