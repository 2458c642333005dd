"""`make deploy-guided`'s questions (scripts/deploy_guided.py) driven under a pseudo-terminal
(guided.py), offline, against moto: the stack's name and the template's first parameter group, in
order, each once; a refused answer asked again with its reason; Enter keeping the default; the
answers read back from samconfig.toml, and offered as the defaults of a second run; nothing
built before the questions end. And `sam deploy --guided` (make deploy-guided QUESTIONS=all):
every parameter, in the Parameters section's order, which follows the console's groups, since
SAM CLI does not read ParameterGroups and asks a NoEcho parameter again on every Enter."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib

import pytest
from cfnlint.decode import decode

import guided
from cloudformation import ROOT, TEMPLATE

sys.path.insert(0, str(ROOT / "scripts"))
import catalog  # noqa: E402
import preflight  # noqa: E402

SOURCE, _ = decode(str(TEMPLATE))
INTERFACE = SOURCE["Metadata"]["AWS::CloudFormation::Interface"]
GROUPS = [group["Parameters"] for group in INTERFACE["ParameterGroups"]]
FIRST_DEPLOY = ["AsyncEndpointName", "IoBucketName", "ModelName", "ModelExecutionRoleArn", "PipelineName",
                "FunctionUrlAuthType", "AlarmEmail"]
QUESTIONS = ["Stack name"] + FIRST_DEPLOY
# What SAM asks beside the parameters, before its first call to AWS.
SAM_BEFORE = ["Stack Name", "AWS Region"]
SAM_AFTER = ["Confirm changes before deploy", "Allow SAM CLI IAM role creation", "Disable rollback",
             "Save arguments to configuration file", "SAM configuration file", "SAM configuration environment"]
ROLE = "arn:aws:iam::123456789012:role/service-role/sm"


@pytest.fixture
def aws(tmp_path):
    """A moto of this test's own, and the environment that reaches it."""
    with guided.Moto() as moto:
        yield guided.aws_env(moto.url, tmp_path), moto


def ask(env, tmp_path, answers, *extra):
    samconfig = tmp_path / "samconfig.toml"
    if not samconfig.exists():  # the repository's own, with its build settings and comments
        shutil.copyfile(ROOT / "samconfig.toml", samconfig)
    argv = [str(guided.PYTHON), str(ROOT / "scripts" / "deploy_guided.py"), "--samconfig", str(samconfig),
            "--layer-dir", str(tmp_path / "layer"), *extra]
    return guided.ours(argv, answers, env)


def deploy_parameters(tmp_path) -> dict:
    return tomllib.loads((tmp_path / "samconfig.toml").read_text())["default"]["deploy"]["parameters"]


def test_the_first_deploy_asks_what_it_decides_checks_each_answer_and_saves_them(aws, tmp_path):
    env, _ = aws
    run = ask(env, tmp_path, ["",                       # Stack name: Enter keeps mcp-async-jobs
                              "", "Doc-EP", "doc-ep",   # required: refused empty, refused uppercase
                              "my-io-bucket", "churn-7",
                              "", ROLE,                 # ModelName needs its role (a Rule)
                              "", "",                   # PipelineName, FunctionUrlAuthType: Enter
                              "oncall", "oncall@example.com"])
    assert run.status == 0, run.output
    assert run.questions == QUESTIONS and len(run.questions) <= 12
    assert run.defaults == ["mcp-async-jobs", None, None, "", "", "", "AWS_IAM", ""]
    assert run.repeated == ["AsyncEndpointName", "AsyncEndpointName", "ModelExecutionRoleArn", "AlarmEmail"]
    assert run.reasons[0] == ("! AsyncEndpointName='': an endpoint name is required (lowercase letters, digits and "
                              "hyphens, at most 63)")
    assert run.reasons[1].startswith("! AsyncEndpointName='Doc-EP': an endpoint name is required")
    assert run.reasons[2].startswith("! ExecutionRoleForEndpoint: ModelName needs ModelExecutionRoleArn")
    assert run.reasons[3].startswith("! AlarmEmail='oncall': does not match")
    # Each question comes with one line on what it is for.
    assert "\n8/8 An e-mail address for alarms (optional)\nAlarmEmail []: " in run.output
    saved = deploy_parameters(tmp_path)
    assert saved["stack_name"] == "mcp-async-jobs" and saved["region"] == "eu-west-1"
    assert preflight.parameter_values([saved["parameter_overrides"]]) == {
        "AsyncEndpointName": "doc-ep", "IoBucketName": "my-io-bucket", "ModelName": "churn-7",
        "ModelExecutionRoleArn": ROLE, "PipelineName": "", "FunctionUrlAuthType": "AWS_IAM",
        "AlarmEmail": "oncall@example.com"}
    # What the file held stays: SAM's other settings, the build's, the comments.
    assert saved["capabilities"] == "CAPABILITY_IAM" and saved["resolve_s3"] is True
    text = (tmp_path / "samconfig.toml").read_text()
    assert text.startswith("# sam build / sam deploy settings") and 'template_file = "infra/template.yaml"' in text
    # make deploy's preflight passed on what was saved; make's build comes after this last line.
    assert run.output.rstrip().endswith("Checked as make deploy checks. Now the release build, then stack mcp-async-jobs into "
                                       "eu-west-1.")


def test_a_second_run_offers_the_first_runs_answers_and_keeps_what_else_was_saved(aws, tmp_path):
    env, _ = aws
    first = ask(env, tmp_path, ["jobs", "doc-ep", "my-io-bucket", "", "", "intent-classifier", "", "a@example.com"])
    assert first.status == 0, first.output
    samconfig = tmp_path / "samconfig.toml"
    # Added by hand since: a tag, and a parameter the questions do not ask.
    text = samconfig.read_text().replace('stack_name = "jobs"', 'stack_name = "jobs"\ntags = "team=ml"')
    samconfig.write_text(text.replace('AlarmEmail=\\"a@example.com\\"', 'AlarmEmail=\\"a@example.com\\" '
                                                                         'LogRetentionDays=\\"30\\"'))
    second = ask(env, tmp_path, ["", "", "", "", "", "-", "NONE", ""])
    assert second.defaults == ["jobs", "doc-ep", "my-io-bucket", "", "", "intent-classifier", "AWS_IAM",
                               "a@example.com"]
    # NONE needs a token or OAuth, which are not asked: the reason says where they are given.
    assert second.repeated == ["FunctionUrlAuthType"]
    assert second.reasons[0].startswith("! BearerTokenForUrlAuthNone: FunctionUrlAuthType NONE without OAuth needs")
    assert "not asked here; give them in samconfig.toml's parameter_overrides or PARAMS" in second.reasons[0]
    assert second.status == 0, second.output
    saved = deploy_parameters(tmp_path)
    assert saved["tags"] == "team=ml" and saved["stack_name"] == "jobs"
    values = preflight.parameter_values([saved["parameter_overrides"]])
    assert values["LogRetentionDays"] == "30" and values["PipelineName"] == "" and values["AlarmEmail"] == "a@example.com"


def test_a_stack_another_deploy_made_is_refused_at_its_prompt(aws, tmp_path):
    env, moto = aws
    guided.create_stack(moto, "jobs", "cdk")
    guided.create_stack(moto, "site", "other")
    run = ask(env, tmp_path, ["jobs", "site", "jobs-sam", "doc-ep", "my-io-bucket"])
    assert run.status == 0, run.output
    assert run.repeated == ["Stack name", "Stack name"]
    assert run.reasons[0].startswith("! stack jobs: made by make cdk-deploy (the CDK app) in eu-west-1; make deploy "
                                     "(SAM) would take it over")
    assert run.reasons[1].startswith("! stack site: exists in eu-west-1 and is not a stack of this template "
                                     "(its description: 'A static website')")
    assert deploy_parameters(tmp_path)["stack_name"] == "jobs-sam"


def test_the_catalogs_models_are_held_to_at_the_prompts(aws, tmp_path):
    env, _ = aws
    catalog.install(ROOT / "infra" / "catalog.example.json", tmp_path / "layer", "mcp-churn-scorer-async=churn-7")
    run = ask(env, tmp_path, ["", "mcp-doc-processor-async", "my-io-bucket",
                              "churn-7", "",            # the catalog's Model: it would be created twice
                              "", ROLE,                 # the catalog's Models need their role
                              "", "churn-pipeline"])    # the catalog's pipeline tool needs PipelineName
    assert run.status == 0, run.output
    assert run.repeated == ["ModelName", "ModelExecutionRoleArn", "PipelineName"]
    assert run.reasons[0].startswith("! CatalogModelNames: churn-7 is named twice (ModelName and place 2 of "
                                     "CatalogModelNames)"), run.reasons
    assert run.reasons[1].startswith("! ExecutionRoleForCatalogModels: CatalogModelNames needs ModelExecutionRoleArn")
    assert run.reasons[2].startswith("! PipelineForCatalogPipelines:"), run.reasons
    # The catalog's parameters are not saved: make deploy passes them for what the layer holds.
    assert set(preflight.parameter_values([deploy_parameters(tmp_path)["parameter_overrides"]])) == set(FIRST_DEPLOY)


def test_what_is_wrong_before_the_questions_stops_them(aws, tmp_path):
    env, _ = aws
    run = ask(env, tmp_path, [], "--params", "ToolsTimeoutSecs=5 Colour=blue ModelName=m")
    assert run.questions == [] and run.status == 2
    assert "error: make deploy-guided stopped before its questions:" in run.output
    assert "  - ModelName: asked by make deploy-guided; answer it there, not in PARAMS" in run.output
    assert "  - ToolsTimeoutSecs='5': must lie in 30..900" in run.output
    assert "  - Colour: the template has no such parameter" in run.output
    # Ctrl-D at a question: nothing saved.
    before = (ROOT / "samconfig.toml").read_text()
    stopped = ask(env, tmp_path, ["\x04"])
    assert stopped.status == 2 and "nothing saved, nothing built" in stopped.output
    assert (tmp_path / "samconfig.toml").read_text() == before


def test_make_deploy_guided_asks_before_it_builds(aws, tmp_path):
    # Its first question comes before any build; Ctrl-D there stops it, nothing built.
    at_first = guided.ours([shutil.which("make"), "--no-print-directory", "deploy-guided"], ["\x04"], aws[0], timeout=300)
    assert at_first.questions == ["Stack name"] and at_first.status != 0, at_first.output
    assert "nothing saved, nothing built" in at_first.output and "cargo" not in at_first.output
    # Without a region it stops before its first question, and builds nothing.
    env = guided.aws_env(guided.NOWHERE, tmp_path)
    del env["AWS_REGION"]
    done = subprocess.run(["make", "--no-print-directory", "deploy-guided"], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "error: make deploy-guided stopped before its questions:\n  - region: no AWS region is set" in done.stderr
    assert "cargo" not in done.stdout + done.stderr and "Stack name" not in done.stdout
    # The recipe's order: the questions, then the build, then sam deploy without --guided.
    plan = subprocess.run(["make", "-n", "--no-print-directory", "deploy-guided"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300).stdout
    steps = [line for line in plan.splitlines() if re.search(r"deploy_guided\.py|\bbuild\b|cargo|sam deploy", line)]
    assert "deploy_guided.py" in steps[0], steps
    assert any("sam build" in s for s in steps[1:]) and "--guided" not in plan, steps
    assert "sam deploy --config-file samconfig.toml" in steps[-1] and "--no-confirm-changeset" in steps[-1], steps
    # make help counts the questions as they are.
    assert f"make deploy-guided  first deployment: {len(QUESTIONS)} questions" in subprocess.run(
        ["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True).stdout


# ---------------------------------------------------------------- the docs

DEPLOYING = ROOT / "docs" / "deploying.md"


def test_the_docs_transcript_is_what_a_first_guided_deploy_prints(aws, tmp_path):
    env, _ = aws
    text = DEPLOYING.read_text()
    transcript = text.split("$ make deploy-guided\n", 1)[1].split("```", 1)[0]
    lines = [line.rstrip() for line in transcript.splitlines()]
    # What was typed at each prompt, the refused answers included.
    prompts = [re.match(r"^[A-Za-z][A-Za-z ]*(?: \[[^\]]*\])?: ?(.*)$", line) for line in lines]
    typed = [prompt.group(1) for prompt in prompts if prompt]
    shutil.copyfile(ROOT / "samconfig.toml", tmp_path / "samconfig.toml")
    argv = [str(guided.PYTHON), str(ROOT / "scripts" / "deploy_guided.py"), "--samconfig", "samconfig.toml",
            "--layer-dir", str(tmp_path / "layer")]
    run = guided.ours(argv, typed, env, cwd=tmp_path)
    assert run.status == 0, run.output
    assert [line.rstrip() for line in run.output.rstrip().splitlines()] == lines
    # The walk above it names the same questions, in order, and the two without a default.
    walk = text.split("### The first deploy, guided", 1)[1].split("```text", 1)[0]
    assert re.findall(r"^\d\. `([A-Za-z ]+)`", walk, re.M) == QUESTIONS
    assert re.findall(r"^\d\. `(\w+)`: \*\*no default\*\*", walk, re.M) == [
        name for name in FIRST_DEPLOY if "Default" not in SOURCE["Parameters"][name]]


def anchors(path) -> set:
    """GitHub's anchors for a Markdown file's headings."""
    found: set = set()
    for heading in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", path.read_text(), flags=re.S), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = 0
        while (f"{slug}-{n}" if n else slug) in found:
            n += 1
        found.add(f"{slug}-{n}" if n else slug)
    return found


def test_every_link_to_a_readme_section_or_within_the_deploy_docs_resolves():
    readme = anchors(ROOT / "README.md")
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for anchor in re.findall(r"\]\(\.\./README\.md#([^)]+)\)", doc.read_text()):
            assert anchor in readme, f"{doc.name}: README.md#{anchor} is no section of the README"
    # The deploy docs' own links to sections, of their own files or of each other.
    for doc in (ROOT / "README.md", DEPLOYING, ROOT / "docs" / "configuration.md"):
        for target, anchor in re.findall(r"\]\(([\w./-]*)#([^)]+)\)", doc.read_text()):
            path = (doc.parent / target).resolve() if target else doc
            assert anchor in anchors(path), f"{doc.name}: {target}#{anchor} does not resolve"


# ---------------------------------------------------------------- sam deploy --guided (QUESTIONS=all)

def test_the_groups_hold_every_parameter_once_in_the_sections_order():
    flat = [name for group in GROUPS for name in group]
    assert flat == list(SOURCE["Parameters"]), "the Parameters section must follow ParameterGroups"
    assert GROUPS[0] == FIRST_DEPLOY
    assert set(INTERFACE["ParameterLabels"]) <= set(SOURCE["Parameters"])
    assert set(FIRST_DEPLOY) <= set(INTERFACE["ParameterLabels"]), "each question's line is its label"


def test_what_has_no_working_default_is_refused_when_empty():
    for name, parameter in SOURCE["Parameters"].items():
        assert not parameter.get("NoEcho"), f"{name} is NoEcho: the guided deploy would ask it in a loop"
        if "Default" not in parameter:
            assert name in FIRST_DEPLOY, f"{name} has no default: make deploy-guided must ask it"
            assert not re.fullmatch(parameter["AllowedPattern"], ""), f"{name} takes an empty value"
            assert parameter.get("ConstraintDescription"), f"{name}: CloudFormation's refusal would not say why"


def test_sams_guided_deploy_asks_each_question_once_in_order_and_ends():
    run = guided.run(TEMPLATE)
    assert run.repeated == [], f"asked again on Enter: {run.repeated}"
    assert run.reached_aws, f"stopped before its questions ran out:\n{run.output[-2000:]}"
    parameters = [f"Parameter {name}" for group in GROUPS for name in group]
    assert run.questions == SAM_BEFORE + parameters + SAM_AFTER
    assert len(run.questions) == len(set(run.questions)) == 2 + len(SOURCE["Parameters"]) + 6
    defaults = dict(zip(run.questions, run.defaults))
    assert defaults["Parameter FunctionUrlAuthType"] == "AWS_IAM"
