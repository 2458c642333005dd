"""Reads count too, through the Python MCP SDKs on the local stack: a server of two callers
(named bearer tokens) with CALLER_READS_PER_MINUTE=4. Once one caller's minute is spent, its
status checks, resources/read and tasks/get are refused with the seconds to wait (a tool error,
or the protocol's error for the two methods), the only item written is its read counter, and
the other caller reads on. The AgentCore Gateway door counts the same."""

import asyncio
import hashlib
import time
import uuid

import pytest
from fastmcp import Client as FastClient
from fastmcp_tasks.client import _send_get
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from conftest import error_text, ok
from lambda_watch import WatchError, free_port, start_watch, stop
from test_sharing import owner_tag

LIMIT = 4
TOKENS = {"alice": f"alice-reads-{uuid.uuid4().hex}", "bob": f"bob-reads-{uuid.uuid4().hex}"}
REFUSED = (f"Quota reached: each caller may make {LIMIT} reads (status checks, provenance, resources/read, "
           "tasks/get) per minute. Nothing was read; try again in ")
# Outside the codes MCP assigns: the server's "quota reached" (contract::QUOTA_REACHED).
QUOTA_REACHED = -32009


@pytest.fixture(scope="module")
def limited(servers):
    """mcp-tools and gateway-target for two named callers, at 4 reads a minute each."""
    tokens = ",".join(f"{n}:{hashlib.sha256(t.encode()).hexdigest()}" for n, t in TOKENS.items())
    port = free_port()
    try:
        proc = start_watch(port, {"AUTH_MODE": "bearer", "MCP_BEARER_TOKENS": tokens,
                                  "CALLER_READS_PER_MINUTE": str(LIMIT)}, "watch-reads")
    except WatchError as e:
        pytest.exit(str(e), 2)
    yield {"url": f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp", "port": port}
    stop(proc)


def client(limited, who):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKENS[who]}"})
    return Client(streamable_http_client(limited["url"], http_client=http), mode="2026-07-28")


def tasks_client(limited, who):
    """A client that declared the tasks extension, for tasks/get."""
    return FastClient(limited["url"], auth=TOKENS[who])


def seconds_to_wait(text: str) -> int:
    assert text.startswith(REFUSED), text
    return int(text[len(REFUSED):].removesuffix(" s."))


async def spend_a_minute(c) -> int:
    """Reads until the quota refuses (at most twice the limit: a minute may end in between), and
    again in the next minute when this one has too little left to test in: the seconds left."""
    for _ in range(2):
        for _ in range(2 * LIMIT + 1):
            result = await c.call_tool("check_training_result", {"session_id": "s"})
            if result.is_error:
                break
        else:
            raise AssertionError("the read quota never refused")
        left = seconds_to_wait(error_text(result))
        if left >= 15:
            return left
        await asyncio.sleep(left + 0.5)
    raise AssertionError("no minute with time left")


def read_counters(aws, who) -> dict:
    prefix = f"quota#{owner_tag(who)}#"
    items = aws["ddb"].scan(TableName=aws["table"], ConsistentRead=True,
                            FilterExpression="begins_with(inference_id, :p)",
                            ExpressionAttributeValues={":p": {"S": prefix}})["Items"]
    return {i["inference_id"]["S"][len(prefix):]: int(i["quota_count"]["N"]) for i in items}


def test_a_caller_over_the_read_quota_reads_nothing_and_the_other_reads_on(limited, aws):
    async def go():
        async with client(limited, "alice") as alice, client(limited, "bob") as bob:
            submitted = ok(await alice.call_tool("submit_job", {"document": "read me"}))
            inference_id = submitted["inference_id"]
            left = await spend_a_minute(alice)
            minute = str(int(time.time()) // 60 * 60)
            assert read_counters(aws, "alice")[f"reads#{minute}"] == LIMIT

            status = await alice.call_tool("check_job_status", {"inference_id": inference_id})
            assert 1 <= seconds_to_wait(error_text(status)) <= left
            with pytest.raises(MCPError) as read:
                await alice.read_resource(f"job://{inference_id}/output")
            async with tasks_client(limited, "alice") as tasks:
                with pytest.raises(MCPError) as task:
                    await _send_get(tasks.session, f"{inference_id}.{'a' * 32}")
            for refused in (read.value.error, task.value.error):
                assert refused.code == QUOTA_REACHED and refused.message.startswith(REFUSED), refused
                assert refused.data["limit"] == LIMIT and 1 <= refused.data["retryAfterSecs"] <= 60
            # Only the counter was written: no other quota item, and submits and reads apart.
            assert set(read_counters(aws, "alice")) <= {f"reads#{minute}", f"reads#{int(minute) - 60}"}

            theirs = await bob.call_tool("check_job_status", {"inference_id": inference_id})
            assert error_text(theirs).startswith("no job"), "bob reads (alice's job is unknown to him)"
            ok(await bob.call_tool("check_training_result", {"session_id": "s"}))
    asyncio.run(go())


def test_the_gateway_door_counts_reads_the_same(limited, gateway):
    for _ in range(2 * LIMIT + 1):
        status, answer = gateway("check_training_result", {"session_id": "gw"}, port=limited["port"])
        assert status == 200, answer
        if answer["isError"]:
            break
    else:
        raise AssertionError("the read quota never refused through the Gateway")
    assert 1 <= seconds_to_wait(answer["content"][0]["text"]) <= 60
