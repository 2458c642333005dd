"""mcp_latency.CpuPerCall: each call's CPU runs from its start to the next call's start on the same
process, warm-up calls are left out, and two processes' calls do not mix."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import mcp_latency  # noqa: E402


def test_a_calls_cpu_runs_to_the_next_call_on_its_own_process(monkeypatch):
    readings = {"a": iter([1_000_000, 3_000_000, 3_500_000, 9_000_000]), "b": iter([0, 4_000_000])}
    monkeypatch.setattr(mcp_latency, "cpu_ns", lambda proc: next(readings[proc]))
    cpu = mcp_latency.CpuPerCall({"front a": "a", "front b": "b"})
    first, second, other = [], [], []
    cpu.start("front a", None)  # a warm-up call: its CPU is read but kept nowhere
    cpu.start("front b", other)
    cpu.start("front a", first)
    cpu.start("front a", second)
    cpu.finish()
    assert first == [0.5] and second == [5.5] and other == [4.0]
