"""Guided deploys driven under a pseudo-terminal, offline, as a person at a terminal would answer
them: `make deploy-guided`'s own questions (scripts/deploy_guided.py, `ours`) and SAM's
`sam deploy --guided` (`sam`, what `make deploy-guided QUESTIONS=all` runs). A question is a
line that ends in ": " and has stopped growing; SAM asks through click, which reads the
terminal, so a pipe would change how it prompts.

    python tests/infra/guided.py [TEMPLATE]   prints SAM's questions, numbered
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
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[2]
SAM = ROOT / ".venv" / "bin" / "sam"
PYTHON = ROOT / ".venv" / "bin" / "python"
# click's prompts: a tab, the question, its default in brackets; confirmations carry [Y/n] or [y/N].
SAM_PROMPT = re.compile(r"\t(?P<question>[^\t\n]*?)(?: \[(?P<default>[^\]\n]*)\])?: $")
# make deploy-guided's: the name asked, its default in brackets (none for a parameter without one).
OUR_PROMPT = re.compile(r"^(?P<question>[A-Za-z][A-Za-z ]*?)(?: \[(?P<default>[^\]\n]*)\])?: $")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
REACHES_AWS = "Looking for resources needed for deployment"
# Where nothing listens: a call to AWS nobody meant fails at once.
NOWHERE = "http://127.0.0.1:9"


class Guided:
    """What one guided run asked: `questions` in order (the text before the default), `defaults`
    beside them, `repeated` the questions asked again right after an answer and `reasons` what
    was printed before each repeat, `output` all it printed, `status` its exit status (None
    when it was stopped)."""

    def __init__(self) -> None:
        self.questions: list = []
        self.defaults: list = []
        self.repeated: list = []
        self.reasons: list = []
        self.output = ""
        self.status: Optional[int] = None
        self.reached_aws = False


def converse(argv: list, env: dict, cwd: str, prompt: re.Pattern, answer: Callable, found: Guided,
             timeout: float = 120.0, stop: str = "") -> Guided:
    """Runs `argv` on a pty; at each question calls answer(question, default, printed since the
    last answer) for the text to type, or None to stop the run there; also stops at `stop`."""
    pid, fd = pty.fork()
    if pid == 0:  # the child, its terminal the pty
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    buffer = ""
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
                found.output += ANSI.sub("", chunk).replace("\r", "")
            if stop and stop in buffer:
                break
            match = prompt.search(buffer.rsplit("\n", 1)[-1])
            if not match:
                continue
            # Only a line that has stopped growing is a question waiting for its answer.
            more, _, _ = select.select([fd], [], [], 0.15)
            if more:
                continue
            typed = answer(match.group("question").strip(), match.group("default"), buffer.rsplit("\n", 1)[0])
            buffer = ""
            if typed is None:
                break
            os.write(fd, (typed + "\n").encode())
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
        found.status = os.waitstatus_to_exitcode(status)
        os.close(fd)
    return found


def ours(argv: list, answers: list, env: dict, cwd: Path = ROOT, timeout: float = 120.0) -> Guided:
    """make deploy-guided's questions (`argv`: make's or the script's command line): `answers` typed
    in turn, one per prompt, a refused one included; Enter once they run out."""
    found = Guided()
    typed = list(answers)

    def answer(question: str, default: Optional[str], before: str) -> str:
        if found.questions and question == found.questions[-1]:
            found.repeated.append(question)
            found.reasons.append("\n".join(line.strip() for line in before.splitlines() if line.strip().startswith("!")))
        else:
            found.questions.append(question)
            found.defaults.append(default)
        return typed.pop(0) if typed else ""

    return converse(argv, env, str(cwd), OUR_PROMPT, answer, found, timeout)


def run(template: Path, answers: dict | None = None, repeat_answer: str | None = None,
        timeout: float = 120.0) -> Guided:
    """`sam deploy --guided` until it would reach AWS ("Looking for resources needed for
    deployment", its first call) or stops. `answers` maps a question's text to what to type instead
    of Enter; a question asked again at once (a hidden one with no default) is answered
    `repeat_answer` the second time, or ends the run when there is none."""
    answers = answers or {}
    found = Guided()

    def answer(question: str, default: Optional[str], before: str) -> Optional[str]:
        if found.questions and question == found.questions[-1]:
            found.repeated.append(question)
            return repeat_answer
        found.questions.append(question)
        found.defaults.append(default)
        return answers.get(question, "")

    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true",
               "AWS_ENDPOINT_URL": NOWHERE, "AWS_MAX_ATTEMPTS": "1", "HOME": work, "TERM": "dumb", "COLUMNS": "200"}
        # A config file of its own (SAM refuses a missing one): nothing saved, nothing read from ours.
        (Path(work) / "samconfig.toml").write_text('version = 0.1\n[default.global.parameters]\nbeta_features = true\n')
        argv = [str(SAM), "deploy", "--guided", "--template-file", str(template),
                "--config-file", str(Path(work) / "samconfig.toml"), "--region", "us-east-1"]
        converse(argv, env, work, SAM_PROMPT, answer, found, timeout, stop=REACHES_AWS)
    found.reached_aws = REACHES_AWS in found.output
    return found


# ---------------------------------------------------------------- the AWS a deploy sees, offline

def aws_env(endpoint: str, tmp: Path) -> dict:
    """This environment without any AWS setting of the caller's (make test's shared moto server
    included), then a region, test credentials and `endpoint` for every service."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return {**env, "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": endpoint, "AWS_MAX_ATTEMPTS": "1",
            "AWS_CONFIG_FILE": str(tmp / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "none"),
            "TERM": "dumb", "SAM_CLI_TELEMETRY": "0"}


class Moto:
    """A moto server of this test's own, from a clean state (moto's state is the process's: a
    server started before, or mock_aws, leaves its stacks in it): `url`, and `client(service)`
    on it."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)

    def __enter__(self) -> "Moto":
        import urllib.request
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.url = f"http://{host}:{port}"
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")).close()
        return self

    def __exit__(self, *_) -> None:
        self.server.stop()

    def client(self, service: str):
        import boto3
        return boto3.session.Session(region_name="eu-west-1", aws_access_key_id="testing",
                                     aws_secret_access_key="testing").client(service, endpoint_url=self.url)


def stack_template(kind: str) -> dict:
    """A stack as each deploy leaves it, as far as preflight looks: SAM's with the template's
    parameters, the CDK app's with CDK's bootstrap parameter only (both with the template's
    description and outputs), and another template's stack."""
    from samtranslator.yaml_helper import yaml_parse
    description = yaml_parse((ROOT / "infra" / "template.yaml").read_text())["Description"]
    parameters = {"sam": {"AsyncEndpointName": {"Type": "String"}, "IoBucketName": {"Type": "String"}},
                  "cdk": {"BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>",
                                               "Default": "/cdk-bootstrap/hnb659fds/version"}},
                  "other": {}}[kind]
    outputs = {name: {"Value": "x"} for name in ("McpFunctionUrl", "ResultsTableName", "S3OutputPath")}
    return {"Description": "A static website" if kind == "other" else description, "Parameters": parameters,
            "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}, "Outputs": {} if kind == "other" else outputs}


def create_stack(session, name: str, kind: str) -> None:
    import json
    if kind == "cdk":  # what make cdk-bootstrap leaves, which the parameter's default reads
        session.client("ssm").put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Value="21", Type="String",
                                            Overwrite=True)
    values = [{"ParameterKey": k, "ParameterValue": "doc-ep" if k == "AsyncEndpointName" else "mcp-io"}
              for k in stack_template(kind)["Parameters"] if kind == "sam"]
    session.client("cloudformation").create_stack(StackName=name, TemplateBody=json.dumps(stack_template(kind)),
                                                  Parameters=values)


if __name__ == "__main__":
    result = run(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "infra" / "template.yaml",
                 repeat_answer="0" * 64)
    for i, (q, d) in enumerate(zip(result.questions, result.defaults), 1):
        print(f"{i:3} {q} [{d}]" if d is not None else f"{i:3} {q}")
    print(f"repeated: {result.repeated}; reached AWS: {result.reached_aws}")
