#!/usr/bin/env python3
"""`make serve`: the functions under `cargo lambda watch` on the local stack, with mcp-tools
reachable by any MCP client until Ctrl-C. Expects the environment of scripts/local_stack.py.

    serve.py [--auth none|bearer|oauth] [--catalog FILE]

none (the default) serves without authentication; bearer with a token made up for this run and
printed once; oauth as an OAuth 2.1 resource server whose tokens come from the development
authorization server (dev/oauth/authorization_server.py), started here on a free port.

--catalog (or TOOL_CATALOG) serves a tool catalog: it is checked first as mcp-tools checks it at
cold start and the tools it serves are printed; a refused one ends here, each mistake on a line.
mcp-tools is then called once before the URL is printed, so a function that cannot start ends
this with its own words instead of leaving every client waiting."""

import argparse
import hashlib
import os
import secrets
import signal
import sys
from pathlib import Path

from catalog import CatalogError, check, served
from lambda_watch import LOCAL_ORIGINS, WatchError, start_watch, stop, wait_started

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dev" / "oauth"))
from authorization_server import AuthorizationServer  # noqa: E402


def stop_as_on_ctrl_c(signum, frame):
    """SIGTERM (a `kill`, a test ending this) stops what this started, as Ctrl-C does: left to
    Python's default, the process would end at once and leave cargo lambda watch running."""
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGTERM, stop_as_on_ctrl_c)
    parser = argparse.ArgumentParser(description="Serve mcp-tools locally until Ctrl-C.")
    parser.add_argument("--auth", choices=("none", "bearer", "oauth"), default="none",
                        help="how mcp-tools authenticates its callers (default: none)")
    parser.add_argument("--catalog", type=Path, default=os.environ.get("TOOL_CATALOG") or None,
                        help="serve this tool catalog (default: TOOL_CATALOG, else none)")
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
    auth_server = None
    if args.auth == "bearer":
        token = secrets.token_urlsafe(32)
        env["MCP_BEARER_TOKEN_SHA256"] = hashlib.sha256(token.encode()).hexdigest()
    elif args.auth == "oauth":
        # Tokens naming no resource get the MCP URL as audience too.
        auth_server = AuthorizationServer(default_audience=url, log_requests=True).start()
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
                print(f"token (shown once): {token}")
                print(f'connect: claude mcp add --transport http mcp-tools {url} --header "Authorization: Bearer {token}"')
            else:
                print(f"MCP server (OAuth, local only): {url}")
                print(f"authorization server (dev only, approves at once as dev-user): {auth_server.url}")
                print(f"connect: claude mcp add --transport http mcp-tools {url}")
                print("  (the client finds the authorization server from the 401; to act as another user,")
                print("   add &login_hint=<name> to the authorization URL it opens)")
            print(f"browser origins allowed: {LOCAL_ORIGINS}")
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
