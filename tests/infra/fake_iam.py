"""IAM's policy simulator, played on 127.0.0.1 for the doctor's tests: moto has no
SimulatePrincipalPolicy. It answers the Query API's SimulatePrincipalPolicy with `allowed` for
every action and resource, except the (role, action, resource) triples a test denies, and
records each request it answered; PutRolePolicy (make wire-endpoint's --attach-role-policy) is
recorded in `attached` and answered. Nothing else is known."""

from __future__ import annotations

import fnmatch
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

NAMESPACE = "https://iam.amazonaws.com/doc/2010-05-08/"


class FakeIam:
    def __init__(self):
        self.denied: list = []  # (role, action, resource glob, decision)
        self.requests: list = []
        self.attached: list = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                self.send_answer(*fake.answer(parse_qs(body)))

            def send_answer(self, status: int, xml: str):
                data = xml.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeIam":
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def deny(self, role: str, action: str, resource: str = "*", decision: str = "implicitDeny") -> None:
        self.denied.append((role, action, resource, decision))

    def reset(self) -> None:
        self.denied.clear()
        self.requests.clear()
        self.attached.clear()

    def decide(self, role: str, action: str, resource: str) -> str:
        for denied_role, denied_action, glob, decision in self.denied:
            if (denied_role, denied_action) == (role, action) and fnmatch.fnmatchcase(resource, glob):
                return decision
        return "allowed"

    def answer(self, form: dict) -> tuple:
        def members(name):
            return [form[k][0] for k in sorted((k for k in form if k.startswith(f"{name}.member.")),
                                               key=lambda k: int(k.rsplit(".", 1)[1]))]
        if form.get("Action", [""])[0] == "PutRolePolicy":
            self.attached.append({k: form[k][0] for k in ("RoleName", "PolicyName", "PolicyDocument")})
            return 200, (f'<PutRolePolicyResponse xmlns="{NAMESPACE}"><ResponseMetadata><RequestId>fake</RequestId>'
                         f"</ResponseMetadata></PutRolePolicyResponse>")
        if form.get("Action", [""])[0] != "SimulatePrincipalPolicy":
            return 400, (f'<ErrorResponse xmlns="{NAMESPACE}"><Error><Type>Sender</Type><Code>InvalidAction</Code>'
                         f"<Message>only SimulatePrincipalPolicy and PutRolePolicy are played here</Message>"
                         f"</Error></ErrorResponse>")
        role = form["PolicySourceArn"][0]
        self.requests.append({"role": role, "actions": members("ActionNames"), "resources": members("ResourceArns"),
                              "resource_policy": form.get("ResourcePolicy", [None])[0]})
        results = "".join(
            f"<member><EvalActionName>{escape(a)}</EvalActionName><EvalResourceName>{escape(r)}</EvalResourceName>"
            f"<EvalDecision>{self.decide(role, a, r)}</EvalDecision><MatchedStatements/><MissingContextValues/></member>"
            for a in members("ActionNames") for r in members("ResourceArns") or ["*"])
        return 200, (f'<SimulatePrincipalPolicyResponse xmlns="{NAMESPACE}"><SimulatePrincipalPolicyResult>'
                     f"<IsTruncated>false</IsTruncated><EvaluationResults>{results}</EvaluationResults>"
                     f"</SimulatePrincipalPolicyResult><ResponseMetadata><RequestId>fake</RequestId>"
                     f"</ResponseMetadata></SimulatePrincipalPolicyResponse>")
