"""What the doctor's end-to-end tests share: running it on a setup and reading its lines."""

import json

from wiring import Setup, lines_by_check, run_script


def run_doctor(setup: Setup):
    result = run_script("doctor.py", setup.doctor_args())
    return result, lines_by_check(result.stdout)


def only_failure(setup: Setup, check: str) -> str:
    """Runs the doctor, asserts `check` is the one FAIL (exit 1) and returns its line."""
    result, lines = run_doctor(setup)
    failed = {c for c, (status, _) in lines.items() if status == "FAIL"}
    assert failed == {check}, result.stdout + result.stderr
    assert result.returncode == 1, result.stdout
    assert "Fix: " in lines[check][1]
    return lines[check][1]


def failed_lines(stdout: str) -> list:
    return [line for line in stdout.splitlines() if line.startswith("FAIL")]


def printed_statement(line: str) -> dict:
    return json.loads(line.split("add to the role's policy: ", 1)[1].split(" and remove", 1)[0])
