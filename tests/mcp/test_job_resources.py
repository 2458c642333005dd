"""Job outputs as MCP resources, through the official Python SDK: a completed job's large output
comes with a resource_link, its owner reads it back with resources/read over the same
authenticated connection, and another caller (named bearer tokens) gets the not-found error an
unknown URI gets. The listings carry their caching hints."""

import asyncio
import json
import uuid

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from conftest import ok
from test_identity import TOKENS, bearer, named  # noqa: F401  (named: the two-token server)
from test_mcp_tools import success_message


def client(url, who):
    http = create_mcp_http_client(headers=bearer(who))
    return Client(streamable_http_client(url, http_client=http), mode="2026-07-28")


def put_json_output(aws, body: bytes) -> str:
    key = f"outputs/{uuid.uuid4()}.out"
    aws["s3"].put_object(Bucket=aws["bucket"], Key=key, Body=body, ContentType="application/json")
    return f"s3://{aws['bucket']}/{key}"


def test_a_large_outputs_link_is_read_back_by_its_owner_and_refused_to_another(named, aws, notify):  # noqa: F811
    big = json.dumps({"pages": ["lorem ipsum " * 50] * 200}).encode()

    async def go():
        async with client(named, "agent-a") as alice:
            submitted = ok(await alice.call_tool("submit_job", {"document": "a long report"}))
            inference_id = submitted["inference_id"]
            notify(success_message(inference_id, put_json_output(aws, big)))
            status = await alice.call_tool("check_job_status", {"inference_id": inference_id})
            view = ok(status)
            assert view["status"] == "completed" and "result" not in view
            assert "X-Amz-Signature=" in view["result_url"], "the presigned URL stays"
            links = [block for block in status.content if block.type == "resource_link"]
            assert len(links) == 1, status.content
            link = links[0]
            assert link.uri == f"job://{inference_id}/output"
            assert (link.size, link.mime_type) == (len(big), "application/json")

            read = await alice.read_resource(link.uri)
            assert [c.uri for c in read.contents] == [link.uri]
            assert read.contents[0].text.encode() == big
            assert read.cache_scope == "private" and read.ttl_ms > 0

            templates = await alice.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [
                "job://{inference_id}/output", "job://{inference_id}/failure"]
            listed = await alice.list_resources()
            assert listed.resources == [] and listed.cache_scope == "public" and listed.ttl_ms == 300000

        async with client(named, "agent-b") as bob:
            with pytest.raises(MCPError) as theirs:
                await bob.read_resource(link.uri)
            with pytest.raises(MCPError) as unknown:
                await bob.read_resource(f"job://{uuid.uuid4()}/output")
        return inference_id, theirs.value, unknown.value

    inference_id, theirs, unknown = asyncio.run(go())
    # -32602: the resource-not-found error of 2026-07-28 (SEP-2164); one answer for both.
    assert theirs.error.code == unknown.error.code == -32602
    assert theirs.error.message.startswith('no resource "job://')
    assert len(theirs.error.message) == len(unknown.error.message)
