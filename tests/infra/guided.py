"""`sam deploy --guided` driven under a pseudo-terminal, offline: every question it asks, in order,
answered with its default (Enter), until it would reach AWS ("Looking for resources needed for
deployment", its first call) or stops. SAM asks through click, which reads the terminal; a pipe
would change how it prompts.

    python tests/infra/guided.py [TEMPLATE]   prints the questions, numbered
"""

from __future__ import annotations

import os
import pty
import re
import select
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAM = ROOT / ".venv" / "bin" / "sam"
# click's prompts end in ": " with the cursor left after them; confirmations carry [Y/n] or [y/N].
PROMPT = re.compile(r"\t(?P<question>[^\t\n]*?)(?: \[(?P<default>[^\]\n]*)\])?: $")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
REACHES_AWS = "Looking for resources needed for deployment"


class Guided:
    """What one guided run asked: `questions` in order (the text before the default), `defaults`
    beside them, `repeated` the questions asked again right after an answer, `reached_aws` whether
    the questions ran out (rather than the run stopping or hanging)."""

    def __init__(self) -> None:
        self.questions: list = []
        self.defaults: list = []
        self.repeated: list = []
        self.reached_aws = False
        self.output = ""


def run(template: Path, answers: dict | None = None, repeat_answer: str | None = None,
        timeout: float = 120.0) -> Guided:
    """Drives one guided run. `answers` maps a question's text to what to type instead of Enter;
    a question asked again at once (a hidden one with no default) is answered `repeat_answer` the
    second time, or ends the run when there is none."""
    answers = answers or {}
    found = Guided()
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true",
               # Nothing listens there: were SAM to call AWS early, it would fail at once.
               "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1",
               "HOME": work, "TERM": "dumb", "COLUMNS": "200"}
        # A config file of its own (SAM refuses a missing one): nothing saved, nothing read from ours.
        (Path(work) / "samconfig.toml").write_text('version = 0.1\n[default.global.parameters]\nbeta_features = true\n')
        pid, fd = pty.fork()
        if pid == 0:  # the child: sam, its terminal the pty
            os.chdir(work)
            os.execve(str(SAM), [str(SAM), "deploy", "--guided", "--template-file", str(template),
                                 "--config-file", str(Path(work) / "samconfig.toml"), "--region", "us-east-1"], env)
        buffer = ""
        last = None
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], 0.5)
                if ready:
                    try:
                        chunk = os.read(fd, 65536).decode(errors="replace")
                    except OSError:  # the child is gone
                        break
                    if not chunk:
                        break
                    buffer += ANSI.sub("", chunk).replace("\r", "")
                    found.output += chunk
                if REACHES_AWS in buffer:
                    found.reached_aws = True
                    break
                tail = buffer.rsplit("\n", 1)[-1]
                match = PROMPT.search(tail)
                if not match or ready:
                    # Only a line that has stopped growing is a question waiting for its answer.
                    if not match:
                        continue
                    more, _, _ = select.select([fd], [], [], 0.15)
                    if more:
                        continue
                question = match.group("question").strip()
                buffer = ""
                if question == last:
                    found.repeated.append(question)
                    if repeat_answer is None:
                        break
                    os.write(fd, (repeat_answer + "\n").encode())
                    continue
                last = question
                found.questions.append(question)
                found.defaults.append(match.group("default"))
                os.write(fd, (answers.get(question, "") + "\n").encode())
        finally:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            os.close(fd)
    return found


if __name__ == "__main__":
    result = run(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "infra" / "template.yaml",
                 repeat_answer="0" * 64)
    for i, (q, d) in enumerate(zip(result.questions, result.defaults), 1):
        print(f"{i:3} {q} [{d}]" if d is not None else f"{i:3} {q}")
    print(f"repeated: {result.repeated}; reached AWS: {result.reached_aws}")
