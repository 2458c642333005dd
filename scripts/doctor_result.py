"""One line of the doctor's report (scripts/doctor.py): a check, its status and what was found,
and for a FAIL or a warning the fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Result:
    status: str  # ok | warn | FAIL | skip
    check: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<4}  {self.check}: {self.detail}"
        return f"{text}. Fix: {self.fix}" if self.fix else text


def ok(check: str, detail: str) -> Result:
    return Result("ok", check, detail)


def fail(check: str, detail: str, fix: str) -> Result:
    return Result("FAIL", check, detail, fix)


def warn(check: str, detail: str, fix: str) -> Result:
    return Result("warn", check, detail, fix)


def skip(check: str, why: str) -> Result:
    return Result("skip", check, why)
