#!/usr/bin/env python3
"""`make serve`: the functions under `cargo lambda watch` on the local stack, with mcp-tools
reachable by any MCP client until Ctrl-C. Expects the environment of scripts/local_stack.py."""

import os
import sys

from lambda_watch import LOCAL_ORIGINS, start_watch, stop


def main() -> int:
    port = int(os.environ["LAMBDA_PORT"])
    watch = start_watch(port, {"AUTH_MODE": "none", "MCP_ALLOWED_ORIGINS": LOCAL_ORIGINS}, "serve")
    print(f"MCP server (no auth, local only): http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp")
    print(f"browser origins allowed: {LOCAL_ORIGINS}")
    print("logs: .local/serve.log; Ctrl-C stops everything", flush=True)
    try:
        return watch.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop(watch)


if __name__ == "__main__":
    sys.exit(main())
