#!/usr/bin/env python3
"""The tool catalog on its way to a stack: into the layer directory sam build packages, and the
template parameters that follow from it.

    catalog.py install FILE [--models ENDPOINT=MODEL,...]
                                   copy FILE into the layer directory, print the parameter overrides;
                                   each endpoint given a Model is created by the stack from it
    catalog.py clear               empty the layer directory (deploys then serve no catalog)
    catalog.py overrides [--samconfig samconfig.toml]
                                   the overrides a deploy passes: samconfig.toml's saved ones, then
                                   the catalog's, one per line

    catalog.py check FILE          check FILE as mcp-tools does at cold start, print the tools it serves

The catalog's rules (schemas, names, argument mappings) are written once, in mcp-tools: `check`
and `install` run its check-catalog (built into CARGO_TARGET_DIR, else target/), which names each
mistake with its tool and field. Beyond that, this reads what the template needs: each async
tool's `endpoint` and each pipeline tool's `pipeline`, at most 10 of each (the template's grants).
The parameters: ToolCatalog (the file's name; the functions read /opt/tool-catalog/<name>),
CatalogEndpointNames and CatalogPipelineNames (each name once, in the catalog's order), and
CatalogModelNames (the Model of each endpoint the stack creates, in its endpoint's place; kept
beside the layer, in tool-catalog-models.json, since the catalog's own format has no place for it).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Optional

from lambda_watch import target_dir

ROOT = Path(__file__).resolve().parents[1]
# The layer's content (the template's ToolCatalogLayer ContentUri); the file goes in tool-catalog/,
# which Lambda extracts to /opt/tool-catalog/.
LAYER_DIR = ROOT / "target" / "tool-catalog-layer"
SUBDIR = "tool-catalog"
# The template's limits (CatalogEndpointNames, CatalogPipelineNames, ToolCatalog); the names
# themselves are held to its patterns by mcp-tools' check, which spells them the same.
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MODEL_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
MAX_NAMES = 10
PARAMETERS = ("ToolCatalog", "CatalogEndpointNames", "CatalogPipelineNames", "CatalogModelNames")


class CatalogError(Exception):
    """The catalog cannot be used (the message names the file, the tool and the field)."""


def refuse(message: str, problems: list = ()) -> int:
    """How these scripts stop (preflight's and the guided deploy's too): `error: message`, each
    problem on a line of its own; exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
    return 2


def load(path: Path) -> dict:
    try:
        catalog = json.loads(path.read_text())
    except OSError as e:
        raise CatalogError(f"{path}: cannot be read ({e.strerror or e})") from e
    except ValueError as e:
        raise CatalogError(f"{path}: not JSON ({e})") from e
    if not isinstance(catalog, dict):
        raise CatalogError(f"{path}: a catalog is a JSON object with async_tools and pipeline_tools")
    return catalog


def tools(catalog: dict, key: str, source: str) -> list:
    found = catalog.get(key, [])
    if not isinstance(found, list):
        raise CatalogError(f"{source}: {key} must be a list of tools")
    return found


def field(tool, key: str, index: int, field_name: str, source: str) -> str:
    where = f"{key}[{index}]"
    if not isinstance(tool, dict):
        raise CatalogError(f"{source}: {where} must be an object")
    name = tool.get("name")
    if isinstance(name, str) and name:
        where += f" ({name})"
    else:
        raise CatalogError(f"{source}: {where}: \"name\" is missing or not a string")
    value = tool.get(field_name)
    if not isinstance(value, str) or not value:
        raise CatalogError(f"{source}: {where}: \"{field_name}\" is missing or not a string")
    return value


def names(catalog: dict, source: str = "catalog") -> tuple:
    """(endpoints, pipelines): each name once, in the catalog's order."""
    endpoints: list = []
    pipelines: list = []
    found = 0
    for key, field_name, into in (("async_tools", "endpoint", endpoints), ("pipeline_tools", "pipeline", pipelines)):
        for i, tool in enumerate(tools(catalog, key, source)):
            found += 1
            value = field(tool, key, i, field_name, source)
            if value not in into:
                into.append(value)
        if len(into) > MAX_NAMES:
            raise CatalogError(f"{source}: {len(into)} {field_name}s; the template grants at most {MAX_NAMES}")
    if not found:
        raise CatalogError(f"{source}: no tools: give async_tools, pipeline_tools or both")
    return endpoints, pipelines


def check(source: Path) -> list:
    """mcp-tools' own check of the catalog (check-catalog): the tools it serves, one line each;
    CatalogError with every mistake, one line each, when it is refused."""
    binary = target_dir() / "debug" / "check-catalog"
    if not binary.is_file():
        raise CatalogError(f"{binary} is missing: build it first (cargo build --bins)")
    done = subprocess.run([str(binary), str(source)], capture_output=True, text=True)
    if done.returncode != 0:
        raise CatalogError(done.stderr.strip() or f"check-catalog exited with {done.returncode}")
    return done.stdout.splitlines()


def overrides(file_name: str, endpoints: list, pipelines: list, models: Optional[dict] = None) -> list:
    models = models or {}
    # In each endpoint's place its Model, or nothing (an endpoint that exists already); trailing
    # empty places dropped.
    placed = ",".join(models.get(e, "") for e in endpoints).rstrip(",")
    values = (file_name, ",".join(endpoints), ",".join(pipelines), placed)
    return [f'{name}="{value}"' for name, value in zip(PARAMETERS, values)]


def models_file(layer_dir: Path) -> Path:
    """Where the endpoints' Models are kept: beside the layer, not in it (Lambda would ship it)."""
    return layer_dir.parent / "tool-catalog-models.json"


def parse_models(text: str, endpoints: list, source: str) -> dict:
    """ENDPOINT=MODEL pairs (comma- or space-separated), each endpoint one of the catalog's, once."""
    models: dict = {}
    for pair in re.split(r"[,\s]+", text.strip()):
        if not pair:
            continue
        endpoint, sep, model = pair.partition("=")
        if not sep or not endpoint or not model:
            raise CatalogError(f"MODELS: {pair!r} is not ENDPOINT=MODEL (e.g. {endpoints[0] if endpoints else 'my-endpoint'}"
                               "=my-model)")
        if endpoint not in endpoints:
            raise CatalogError(f"MODELS: {endpoint!r} is not an endpoint of {source} "
                               f"(its endpoints: {', '.join(endpoints) or 'none'})")
        if endpoint in models:
            raise CatalogError(f"MODELS: {endpoint!r} is given twice")
        if MODEL_NAME.fullmatch(model) is None:
            raise CatalogError(f"MODELS: {model!r} (for {endpoint}) is not a SageMaker Model name (letters, digits, "
                               "hyphens, at most 63)")
        models[endpoint] = model
    return models


def installed(layer_dir: Path) -> Optional[Path]:
    files = sorted((layer_dir / SUBDIR).glob("*")) if (layer_dir / SUBDIR).is_dir() else []
    if len(files) > 1:
        raise CatalogError(f"{layer_dir / SUBDIR} holds {len(files)} files; run make catalog again")
    return files[0] if files else None


def layer_overrides(layer_dir: Path) -> list:
    """The overrides for what the layer directory holds; empty values without a catalog."""
    path = installed(layer_dir)
    if path is None:
        return overrides("", [], [])
    endpoints, pipelines = names(load(path), str(path))
    saved = models_file(layer_dir)
    models = json.loads(saved.read_text()) if saved.is_file() else {}
    stale = [e for e in models if e not in endpoints]
    if stale:
        raise CatalogError(f"{saved}: Models for endpoints {path.name} does not name ({', '.join(stale)}); "
                           "run make catalog again")
    return overrides(path.name, endpoints, pipelines, models)


def clear(layer_dir: Path) -> None:
    shutil.rmtree(layer_dir / SUBDIR, ignore_errors=True)
    models_file(layer_dir).unlink(missing_ok=True)
    layer_dir.mkdir(parents=True, exist_ok=True)


def install(source: Path, layer_dir: Path, models_text: str = "", checked: bool = False) -> list:
    if FILE_NAME.fullmatch(source.name) is None:
        raise CatalogError(f"{source}: name the file with letters, digits, '.', '_' and '-' only "
                           "(it becomes the ToolCatalog parameter)")
    if not checked:
        check(source)
    endpoints, pipelines = names(load(source), str(source))
    models = parse_models(models_text, endpoints, str(source))
    clear(layer_dir)
    (layer_dir / SUBDIR).mkdir()
    shutil.copyfile(source, layer_dir / SUBDIR / source.name)
    if models:
        models_file(layer_dir).write_text(json.dumps(models, indent=2) + "\n")
    return overrides(source.name, endpoints, pipelines, models)


def saved_overrides(samconfig: Path) -> list:
    """The parameter_overrides `sam deploy --guided` saved (a command line's replace them)."""
    if not samconfig.is_file():
        return []
    saved = tomllib.loads(samconfig.read_text()).get("default", {}).get("deploy", {}).get("parameters", {})
    value = saved.get("parameter_overrides", [])
    return [value] if isinstance(value, str) else [str(v) for v in value]


def served(source: Path, tools: list) -> str:
    return "\n".join([f"the tool catalog {source} serves:"] + [f"  {tool}" for tool in tools])


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--layer-dir", type=Path, default=LAYER_DIR, help=f"default {LAYER_DIR.relative_to(ROOT)}")
    commands = parser.add_subparsers(dest="command", required=True)
    install_command = commands.add_parser("install", help="copy a catalog into the layer directory")
    install_command.add_argument("file", type=Path)
    install_command.add_argument("--models", default="", metavar="ENDPOINT=MODEL,...",
                                 help="the Model of each catalog endpoint the stack creates")
    commands.add_parser("clear", help="empty the layer directory")
    check_command = commands.add_parser("check", help="check a catalog, print the tools it serves")
    check_command.add_argument("file", type=Path)
    overrides_command = commands.add_parser("overrides", help="the parameter overrides a deploy passes")
    overrides_command.add_argument("--samconfig", type=Path, help="prepend the overrides saved there")
    args = parser.parse_args(argv)

    try:
        if args.command == "check":
            print(served(args.file, check(args.file)))
        elif args.command == "install":
            print(served(args.file, check(args.file)), file=sys.stderr)
            lines = install(args.file, args.layer_dir, args.models, checked=True)
            print(f"copied into {args.layer_dir / SUBDIR}; make deploy passes:", file=sys.stderr)
            print(" ".join(lines))
        elif args.command == "clear":
            clear(args.layer_dir)
            print(f"{args.layer_dir} is empty: deploys serve no catalog", file=sys.stderr)
        else:
            saved = saved_overrides(args.samconfig) if args.samconfig else []
            print("\n".join(saved + layer_overrides(args.layer_dir)))
    except CatalogError as e:
        return refuse(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
