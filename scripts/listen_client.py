"""A `subscriptions/listen` naming tasks, spoken as the wire (no Python MCP client opens one
yet: the SDK's `Client.listen` has no `taskIds`). Used by `make demo` and the tests."""

import http.client
import json
import threading
import time
import urllib.parse

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


class Listen:
    """One `subscriptions/listen` held in a thread: each JSON-RPC message with when it came."""

    def __init__(self, url, task_ids, headers=None, request_id=7):
        body = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen", "params": {
            "notifications": {"taskIds": task_ids},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {
                          "extensions": {"io.modelcontextprotocol/tasks": {}}}}}}
        self.messages = []  # (monotonic time, message)
        self.comments = 0
        self.status = None
        self.error = None
        self.acked = threading.Event()
        parsed = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=120)
        self.conn.request("POST", parsed.path, body=json.dumps(body), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen", **(headers or {})})
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            resp = self.conn.getresponse()
            self.status = resp.status
            while True:
                line = resp.readline()
                if not line:
                    break
                line = line.decode().rstrip("\n")
                if line.startswith(":"):
                    self.comments += 1
                elif line.startswith("data:") and line[5:].strip():
                    message = json.loads(line[5:])
                    self.messages.append((time.monotonic(), message))
                    if message.get("method") == "notifications/subscriptions/acknowledged":
                        self.acked.set()
        except Exception as e:  # noqa: BLE001 - reported by the test that reads it
            self.error = e
        finally:
            self.acked.set()
            self.conn.close()

    def ended(self, timeout):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"the listen was still open after {timeout} s: {self.messages}"
        assert self.error is None, self.error
        return [m for _, m in self.messages]

    def tasks(self):
        return [(t, m["params"]) for t, m in self.messages if m.get("method") == "notifications/tasks"]
