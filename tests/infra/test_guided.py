"""`make deploy-guided`'s questions: `sam deploy --guided` driven under a pseudo-terminal (guided.py),
every question answered with Enter. SAM CLI asks the template's parameters in the order of its
Parameters section (it does not read ParameterGroups) and asks a NoEcho parameter, hidden and with
no default, again on every Enter. So the Parameters section follows the console's groups, what a
first deploy must decide comes first, and no parameter is NoEcho."""

from __future__ import annotations

import re

from cfnlint.decode import decode

import guided
from cloudformation import ROOT, TEMPLATE

SOURCE, _ = decode(str(TEMPLATE))
INTERFACE = SOURCE["Metadata"]["AWS::CloudFormation::Interface"]
GROUPS = [group["Parameters"] for group in INTERFACE["ParameterGroups"]]
FIRST_DEPLOY = ["AsyncEndpointName", "IoBucketName", "ModelName", "ModelExecutionRoleArn", "PipelineName",
                "FunctionUrlAuthType", "AlarmEmail"]
# What SAM asks beside the parameters, before its first call to AWS.
SAM_BEFORE = ["Stack Name", "AWS Region"]
SAM_AFTER = ["Confirm changes before deploy", "Allow SAM CLI IAM role creation", "Disable rollback",
             "Save arguments to configuration file", "SAM configuration file", "SAM configuration environment"]


def test_the_groups_hold_every_parameter_once_in_the_sections_order():
    flat = [name for group in GROUPS for name in group]
    assert flat == list(SOURCE["Parameters"]), "the Parameters section must follow ParameterGroups"
    assert GROUPS[0] == FIRST_DEPLOY
    assert set(INTERFACE["ParameterLabels"]) <= set(SOURCE["Parameters"])


def test_what_has_no_working_default_is_refused_when_empty():
    for name, parameter in SOURCE["Parameters"].items():
        assert not parameter.get("NoEcho"), f"{name} is NoEcho: the guided deploy would ask it in a loop"
        if "Default" not in parameter:
            assert not re.fullmatch(parameter["AllowedPattern"], ""), f"{name} takes an empty value"
            assert parameter.get("ConstraintDescription"), f"{name}: CloudFormation's refusal would not say why"


def test_the_guided_deploy_asks_each_question_once_in_order_and_ends():
    run = guided.run(TEMPLATE)
    assert run.repeated == [], f"asked again on Enter: {run.repeated}"
    assert run.reached_aws, f"stopped before its questions ran out:\n{run.output[-2000:]}"
    parameters = [f"Parameter {name}" for group in GROUPS for name in group]
    assert run.questions == SAM_BEFORE + parameters + SAM_AFTER
    assert len(run.questions) == len(set(run.questions)) == 2 + len(SOURCE["Parameters"]) + 6
    # Enter takes each default: the first deploy's answers are given to make deploy-guided's
    # sam deploy as overrides, and the rest work as they are.
    defaults = dict(zip(run.questions, run.defaults))
    assert defaults["Parameter FunctionUrlAuthType"] == "AWS_IAM"
