#!/usr/bin/env python3
"""make deploy-guided: what a first deploy decides, asked and checked before anything is built.

    deploy_guided.py [--stack-name NAME] [--params "N=V ..."] [--samconfig FILE] [--layer-dir DIR]

The questions: the stack's name, then the template's first parameter group ("What every first
deploy decides"), each with its default in brackets (Enter keeps it; `-` empties an optional
one) and its label as the line on what it is for. Each answer is checked at its prompt by
preflight's rules (the parameter's pattern or values; the Rules that read it, once every
parameter they read is answered; a Model named twice; a stack of that name another deploy
made), and a refused answer is asked again with the reason. The answers are saved in
samconfig.toml ([default.deploy.parameters]: stack_name, region, parameter_overrides; whatever
else is there stays), where a second run finds them as its defaults; then make deploy's
preflight runs on all of it. Exit 0: make builds and deploys with no further question.

Every other parameter keeps its template default, or the value samconfig.toml's
parameter_overrides or PARAMS gives it (docs/configuration.md); before the first question they
are checked, with the region and the tool catalog, so that no answer is given in vain.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aws_region  # noqa: E402
import catalog  # noqa: E402
import preflight  # noqa: E402

# The stack's name when neither STACK nor samconfig.toml gives one (the CDK app's default too).
DEFAULT_STACK = preflight.CDK_STACK
STACK_QUESTION = "Stack name"
# Typed for an optional parameter whose default is not empty: the empty value.
EMPTY = "-"


class Stop(Exception):
    """The questions cannot go on (end of input, or the stack cannot be looked up)."""


def first_group(cfn: dict) -> list:
    """What every first deploy decides: the template's first ParameterGroup."""
    return list(cfn["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"][0]["Parameters"])


def about(cfn: dict, name: str) -> str:
    """A parameter's one line: its label, else its description's first sentence."""
    label = cfn["Metadata"]["AWS::CloudFormation::Interface"].get("ParameterLabels", {}).get(name)
    if label:
        return label["default"]
    return " ".join(str(cfn["Parameters"][name].get("Description", "")).split()).split(". ")[0]


def ask(number: int, total: int, name: str, line: str, default: Optional[str], check: Callable, read, out) -> str:
    """One question until its answer passes `check` (None, or the reason to ask again)."""
    print(f"\n{number}/{total} {line}", file=out)
    while True:
        out.write(f"{name}{f' [{default}]' if default is not None else ''}: ")
        out.flush()
        typed = read.readline()
        if not typed:
            raise Stop("no answer (end of input)")
        typed = typed.strip()
        value = ("" if default is None else default) if typed == "" else "" if typed == EMPTY else typed
        problem = check(value)
        if problem is None:
            return value
        print(f"  ! {problem}", file=out)


def overrides_text(values: dict) -> str:
    """parameter_overrides as sam deploy --guided writes it: Name="value" words."""
    escaped = {name: value.replace("\\", "\\\\").replace('"', '\\"') for name, value in values.items()}
    return " ".join(f'{name}="{value}"' for name, value in escaped.items())


def save(samconfig: Path, stack_name: str, region: str, values: dict) -> None:
    """Into [default.deploy.parameters], keeping every other key, table and comment of the file."""
    import tomlkit
    document = tomlkit.parse(samconfig.read_text()) if samconfig.is_file() else tomlkit.document()
    if "version" not in document:
        document.add("version", 0.1)
    table = document
    for key in ("default", "deploy", "parameters"):
        if key not in table:
            table[key] = tomlkit.table(is_super_table=key != "parameters")
        table = table[key]
    table["stack_name"] = stack_name
    # What sam deploy's own commands (sam logs, sam list) read; make's deploys pass the region.
    table["region"] = region
    table["parameter_overrides"] = overrides_text(values)
    for key, value in (("capabilities", "CAPABILITY_IAM"), ("resolve_s3", True)):
        if key not in table:
            table[key] = value
    samconfig.write_text(tomlkit.dumps(document))


def known_values(args, cfn: dict, asked: list) -> tuple:
    """(problems, values): what sam deploy would be given besides the answers (samconfig.toml's
    overrides, the catalog's, PARAMS), checked now as far as it does not wait on an answer."""
    problems = preflight.preflight("guided", "", args.samconfig, args.layer_dir)
    values: dict = {}
    try:
        sources = [(catalog.saved_overrides(args.samconfig), f"{args.samconfig}: parameter_overrides")]
    except tomllib.TOMLDecodeError as e:
        return problems + [f"{args.samconfig}: not TOML ({e})"], values
    try:
        sources.append((catalog.layer_overrides(args.layer_dir), "tool catalog"))
    except catalog.CatalogError:
        pass  # preflight named it
    sources.append((args.params.split(), "PARAMS"))
    for lines, source in sources:
        try:
            given = preflight.parameter_values(lines)
        except Exception as e:  # click's BadParameter: they do not parse as sam deploy parses them
            problems.append(f"{source} cannot be read ({e})")
            continue
        if source == "PARAMS":  # make would pass them after the answers, which they would undo
            problems += [f"{name}: asked by make deploy-guided; answer it there, not in PARAMS"
                         for name in given if name in asked]
        values.update(given)
    specs = cfn["Parameters"]
    for name, value in values.items():
        if name not in specs:
            problems.append(f"{name}: the template has no such parameter (remove it from samconfig.toml or PARAMS)")
        elif name not in asked:
            problems += [p for p in [preflight.check_value(name, specs[name], value)] if p]
    if not problems:
        problems += preflight.check_rules(values, cfn, pending=frozenset(asked))
        problems += preflight.check_models({name: v for name, v in values.items() if name not in asked})
    return problems, values


def answer_check(cfn: dict, name: str, values: dict, pending: frozenset, asked: list) -> Callable:
    """preflight's rules for one parameter's answer, given the values known so far: its own
    pattern or values, the Rules that read it and no parameter still to be asked, and a Model
    named twice because of it."""
    def check(value: str) -> Optional[str]:
        problem = preflight.check_value(name, cfn["Parameters"][name], value)
        if problem:
            return problem
        trial = {**values, name: value}
        problems = preflight.check_rules(trial, cfn, about=name, pending=pending)
        problems = [p + unasked(cfn, p.split(":")[0], asked) for p in problems]
        without = preflight.check_models({**values, name: ""})
        problems += [p for p in preflight.check_models(trial) if p not in without]
        return "; ".join(problems) or None
    return check


def unasked(cfn: dict, rule_name: str, asked: list) -> str:
    """For a Rule reading parameters not asked here: where those are given."""
    rest = sorted(preflight.refs(cfn["Rules"][rule_name]) - set(asked))
    if not rest:
        return ""
    return (f" ({', '.join(rest)}: not asked here; give them in samconfig.toml's parameter_overrides or "
            "PARAMS=\"Name=Value ...\" and run make deploy-guided again, or answer otherwise)")


def stack_check(session) -> Callable:
    def check(name: str) -> Optional[str]:
        elsewhere = "choose another stack name"
        problem = preflight.stack_name_problem(name, elsewhere)
        if problem:
            return problem
        try:
            return preflight.check_stack(session, name, "sam", elsewhere)
        except preflight.LookupFailed as e:
            raise Stop(str(e)) from e
    return check


def guided(args, read, out) -> int:
    cfn = preflight.template()
    asked = first_group(cfn)
    problems, values = known_values(args, cfn, asked)
    if problems:
        return catalog.refuse("make deploy-guided stopped before its questions:", problems)
    region, source = aws_region.caller_region_and_source()
    config = preflight.saved(args.samconfig)
    total = 1 + len(asked)
    print(f"make deploy-guided: {total} questions, then the build (about 20 minutes cold) and the deploy to "
          f"{region} (from {source}), with no further question.", file=out)
    print(f"Enter keeps the [default]; {EMPTY} empties an optional answer. Every other parameter keeps its "
          "default (docs/configuration.md).", file=out)
    stack_name = ask(1, total, STACK_QUESTION, "The CloudFormation stack's name (a new one, or one make deploy "
                     "made)", args.stack_name or config.get("stack_name") or DEFAULT_STACK,
                     stack_check(aws_region.session(out=None)), read, out)
    answers: dict = {}
    for number, name in enumerate(asked, start=2):
        spec = cfn["Parameters"][name]
        default = values.get(name, spec.get("Default"))
        pending = frozenset(asked[number - 1:])
        answers[name] = values[name] = ask(number, total, name, about(cfn, name), default,
                                           answer_check(cfn, name, values, pending, asked), read, out)
    saved_values = preflight.parameter_values(catalog.saved_overrides(args.samconfig))
    save(args.samconfig, stack_name, region, {**saved_values, **answers})
    shown = args.samconfig.relative_to(Path.cwd()) if args.samconfig.is_relative_to(Path.cwd()) else args.samconfig
    print(f"\nSaved in {shown}: stack_name, region and the {len(asked)} answers (make deploy redeploys from "
          "there).", file=out)
    problems = preflight.preflight("deploy", stack_name, args.samconfig, args.layer_dir, args.params)
    if problems:
        return catalog.refuse("make deploy-guided stopped before building:", problems)
    print(f"Checked as make deploy checks. Now the release build, then stack {stack_name} into {region}.", file=out)
    return 0


def main(argv: Optional[list] = None, read=sys.stdin, out=sys.stdout) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--stack-name", default="", help="the stack name offered (STACK=)")
    parser.add_argument("--params", default="", help="make's PARAMS: more parameters, Name=Value words")
    parser.add_argument("--samconfig", type=Path, default=preflight.ROOT / "samconfig.toml")
    parser.add_argument("--layer-dir", type=Path, default=catalog.LAYER_DIR)
    args = parser.parse_args(argv)
    try:
        return guided(args, read, out)
    except (Stop, KeyboardInterrupt) as e:
        print(file=out)  # off the unanswered prompt's line
        why = str(e) if isinstance(e, Stop) else "Ctrl-C"
        return catalog.refuse(f"make deploy-guided stopped: {why}; nothing saved, nothing built")


if __name__ == "__main__":
    sys.exit(main())
