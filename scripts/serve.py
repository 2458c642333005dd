#!/usr/bin/env python3
"""`make serve`: the functions under `cargo lambda watch` on the local stack, with mcp-tools
reachable by any MCP client until Ctrl-C. Expects the environment of scripts/local_stack.py.

    serve.py [--auth none|bearer|oauth] [--catalog FILE] [--approvals]

none (the default) serves without authentication; bearer with a token made up for this run and
printed once; oauth as an OAuth 2.1 resource server whose tokens come from the development
authorization server (dev/oauth/authorization_server.py), started here on a free port.

--catalog (or TOOL_CATALOG) serves a tool catalog: it is checked first as mcp-tools checks it at
cold start and the tools it serves are printed; a refused one ends here, each mistake on a line.
mcp-tools is then called once before the URL is printed, so a function that cannot start ends
this with its own words instead of leaving every client waiting.

--approvals (make serve APPROVALS=1) serves a pipeline that asks a person: trigger_training runs
the stand-in's copy of dev/pipelines/approval.json, whose CallbackStep asks before the model is
registered, and the registered model then waits for approval (APPROVAL_GATE). Who answers is
set as a deployment sets it (APPROVERS, docs/approvals.md): with no auth the one local caller,
who owns every run (APPROVERS unset);
with bearer tokens an `approver` token beside the `owner` one that starts runs; with OAuth the
user `approver`. What is served and how to answer is printed."""

import argparse
import hashlib
import json
import os
import secrets
import signal
import sys
from pathlib import Path

from botocore.exceptions import ClientError

from catalog import CatalogError, check, served
from demo import APPROVAL_PIPELINE, approval_pipeline
from lambda_watch import LOCAL_ORIGINS, ROOT, WatchError, start_watch, stop, wait_started

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dev" / "oauth"))
from authorization_server import AuthorizationServer  # noqa: E402


def stop_as_on_ctrl_c(signum, frame):
    """SIGTERM (a `kill`, a test ending this) stops what this started, as Ctrl-C does: left to
    Python's default, the process would end at once and leave cargo lambda watch running."""
    raise KeyboardInterrupt


def approvals(auth: str, tokens: dict) -> dict:
    """The approval pipeline on the stand-in, and mcp-tools' settings for it; `tokens` gets the
    bearer tokens it makes up (name -> token)."""
    if not os.environ.get("AWS_ENDPOINT_URL_SAGEMAKER"):
        raise LookupError("--approvals needs the SageMaker stand-in (AWS_ENDPOINT_URL_SAGEMAKER): run it "
                          "through make serve APPROVALS=1")
    try:
        approval_pipeline()
    except ClientError as e:
        # The stand-in has it already, made from the same file (by the tests' or the demo's run).
        if "already exists" not in str(e):
            raise
    # A person at a client sees a question within a second of its asking.
    env = {"PIPELINE_NAME": APPROVAL_PIPELINE, "APPROVAL_GATE": "true", "TASK_POLL_INTERVAL_MS": "1000"}
    if auth == "bearer":
        tokens.update((name, secrets.token_urlsafe(32)) for name in ("owner", "approver"))
        env["MCP_BEARER_TOKENS"] = ",".join(f"{name}:{hashlib.sha256(token.encode()).hexdigest()}"
                                            for name, token in tokens.items())
    # Without auth every caller is `local`, who owns every run: no approvers can be named, and the
    # owner answers. Otherwise the approver is another caller than the owner.
    if auth != "none":
        env["APPROVERS"] = "approver"
    return env


def print_approvals(auth: str) -> None:
    question = json.loads((ROOT / "dev" / "pipelines" / "approval.json").read_text())["Steps"][0]
    print(f"approvals: trigger_training runs {APPROVAL_PIPELINE} (dev/pipelines/approval.json); its CallbackStep "
          f"{question['Name']} asks \"{question['Arguments']['prompt']}\", then the model it registers waits for "
          "approval (APPROVAL_GATE)")
    print("  answer: a client with MCP tasks gets each question as a form on the run's task; without tasks, "
          "check_training_status shows it in waiting_for_input and answer_training_input answers it "
          "(approve_model_package the model)")
    if auth == "none":
        print("  who answers: the caller who started the run (no auth: every caller is local, so APPROVERS is "
              "left unset; name approvers with AUTH=bearer or AUTH=oauth)")
    elif auth == "bearer":
        print("  who answers: the approver token only (APPROVERS=approver). Start runs with the owner token (its "
              "answers are ignored: the run's owner does not answer its own run); the approver's "
              "check_training_status of the run's execution_arn shows the question and the run's task_id, "
              "answered through a tasks client's form (tasks/update) or answer_training_input")
    else:
        print("  who answers: the user approver only (APPROVERS=approver: sign in with &login_hint=approver added "
              "to the authorization URL). Start runs as dev-user, the default sign-in (its answers are ignored)")


def main() -> int:
    signal.signal(signal.SIGTERM, stop_as_on_ctrl_c)
    parser = argparse.ArgumentParser(description="Serve mcp-tools locally until Ctrl-C.")
    parser.add_argument("--auth", choices=("none", "bearer", "oauth"), default="none",
                        help="how mcp-tools authenticates its callers (default: none)")
    parser.add_argument("--catalog", type=Path, default=os.environ.get("TOOL_CATALOG") or None,
                        help="serve this tool catalog (default: TOOL_CATALOG, else none)")
    parser.add_argument("--approvals", action="store_true",
                        help="trigger_training's pipeline asks a person (make serve APPROVALS=1)")
    args = parser.parse_args()
    port = int(os.environ["LAMBDA_PORT"])
    url = f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
    env = {"AUTH_MODE": args.auth, "MCP_ALLOWED_ORIGINS": LOCAL_ORIGINS}
    if args.catalog is not None:
        catalog = args.catalog.resolve()
        try:
            print(served(args.catalog, check(catalog)), flush=True)
        except CatalogError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        env["TOOL_CATALOG"] = str(catalog)
    tokens: dict = {}
    if args.approvals:
        try:
            env.update(approvals(args.auth, tokens))
        except LookupError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    auth_server = None
    if args.auth == "bearer" and not tokens:
        tokens["default"] = secrets.token_urlsafe(32)
        env["MCP_BEARER_TOKEN_SHA256"] = hashlib.sha256(tokens["default"].encode()).hexdigest()
    elif args.auth == "oauth":
        # Tokens naming no resource get the MCP URL as audience too.
        # The user `approver` is given the approval scope (make serve APPROVALS=1 names it).
        auth_server = AuthorizationServer(default_audience=url, log_requests=True,
                                          approvers=("approver",)).start()
        # The development authorization server is on this machine: allowed for local runs only.
        env.update(OAUTH_ISSUER=auth_server.url, OAUTH_AUDIENCE=url, OAUTH_JWKS_MIN_REFRESH_SECS="1",
                   OAUTH_ALLOW_LOCAL_ISSUER="true")
    try:
        watch = start_watch(port, env, "serve")
        try:
            try:
                wait_started(watch, port, "serve")
            except WatchError as e:
                print(f"error: {e}\n(the whole log: .local/serve.log)", file=sys.stderr)
                return 1
            if args.auth == "none":
                print(f"MCP server (no auth, local only): {url}")
            elif args.auth == "bearer":
                print(f"MCP server (bearer token, local only): {url}")
                for name, token in tokens.items():
                    caller = "" if name == "default" else f" {name}"
                    print(f"token{caller} (shown once): {token}")
                    print(f"connect: claude mcp add --transport http mcp-tools{caller.replace(' ', '-')} {url} "
                          f'--header "Authorization: Bearer {token}"')
            else:
                print(f"MCP server (OAuth, local only): {url}")
                print(f"authorization server (dev only, approves at once as dev-user): {auth_server.url}")
                print(f"connect: claude mcp add --transport http mcp-tools {url}")
                print("  (the client finds the authorization server from the 401; to act as another user,")
                print("   add &login_hint=<name> to the authorization URL it opens)")
            print(f"browser origins allowed: {LOCAL_ORIGINS}")
            if args.approvals:
                print_approvals(args.auth)
            print("logs: .local/serve.log; Ctrl-C stops everything", flush=True)
            return watch.wait()
        except KeyboardInterrupt:
            return 0
        finally:
            stop(watch)
    finally:
        if auth_server is not None:
            auth_server.stop()


if __name__ == "__main__":
    sys.exit(main())
