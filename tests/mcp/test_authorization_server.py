"""The development OAuth authorization server (dev/oauth/authorization_server.py): the flow an
MCP client runs, the refusals a resource server's tests rely on, and the official MCP SDK's OAuth
client completing its flow against it through a stub resource. Pure Python, no local stack."""

import asyncio
import base64
import hashlib
import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dev" / "oauth"))
from authorization_server import AuthorizationServer  # noqa: E402
from oauth_client import REDIRECT_URI, oauth_provider  # noqa: E402

RESOURCE = "http://127.0.0.1:9/lambda-url/mcp-tools/mcp"


@pytest.fixture
def auth_server():
    with AuthorizationServer() as server:
        yield server


@pytest.fixture
def http():
    with httpx2.Client(follow_redirects=False, timeout=10) as client:
        yield client


def b64decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def verify(token: str, jwks: dict) -> tuple[dict, dict]:
    """The header and claims of an RS256 JWT whose signature a key of `jwks` verifies."""
    head_b64, body_b64, sig_b64 = token.split(".")
    header = json.loads(b64decode(head_b64))
    key = next(k for k in jwks["keys"] if k["kid"] == header["kid"])
    public = rsa.RSAPublicNumbers(int.from_bytes(b64decode(key["e"]), "big"),
                                  int.from_bytes(b64decode(key["n"]), "big")).public_key()
    public.verify(b64decode(sig_b64), f"{head_b64}.{body_b64}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return header, json.loads(b64decode(body_b64))


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def register(http, server, **meta) -> dict:
    body = {"redirect_uris": [REDIRECT_URI], "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none", "client_name": "test", **meta}
    r = http.post(f"{server.url}/register", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def authorize(http, server, client_id: str, challenge: str, **params) -> dict:
    """The query of the authorization response's redirect."""
    q = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": "st-1",
         "code_challenge": challenge, "code_challenge_method": "S256", "resource": RESOURCE, **params}
    r = http.get(f"{server.url}/authorize", params={k: v for k, v in q.items() if v is not None})
    assert r.status_code == 302, r.text
    location = urlsplit(r.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT_URI
    return {k: v[0] for k, v in parse_qs(location.query).items()}


def code_for(http, server, **params) -> tuple[dict, str, str]:
    client = register(http, server)
    verifier, challenge = pkce()
    answer = authorize(http, server, client["client_id"], challenge, **params)
    return client, answer["code"], verifier


def exchange(http, server, client_id: str, code: str, verifier: str, **form):
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
            "client_id": client_id, "code_verifier": verifier, "resource": RESOURCE, **form}
    return http.post(f"{server.url}/token", data={k: v for k, v in data.items() if v is not None})


def test_full_flow_metadata_register_authorize_token_refresh(auth_server, http):
    meta = http.get(f"{auth_server.url}/.well-known/oauth-authorization-server").json()
    assert meta == http.get(f"{auth_server.url}/.well-known/openid-configuration").json()
    assert meta["issuer"] == auth_server.url and not auth_server.url.endswith("/")
    assert meta["token_endpoint"] == f"{auth_server.url}/token"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert meta["scopes_supported"] == ["jobs:read", "jobs:write", "jobs:approve"]

    client = register(http, auth_server)
    assert "client_secret" not in client and client["token_endpoint_auth_method"] == "none"
    assert client["client_name"] == "test" and client["redirect_uris"] == [REDIRECT_URI]

    verifier, challenge = pkce()
    answer = authorize(http, auth_server, client["client_id"], challenge, scope="jobs:read", login_hint="alice")
    assert answer["state"] == "st-1" and answer["iss"] == auth_server.url

    r = exchange(http, auth_server, client["client_id"], answer["code"], verifier)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    tokens = r.json()
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "jobs:read" and tokens["expires_in"] == 3600

    jwks = http.get(meta["jwks_uri"]).json()
    (key,) = jwks["keys"]
    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig"
    assert len(b64decode(key["n"])) * 8 == 2048
    header, claims = verify(tokens["access_token"], jwks)
    assert header == {"alg": "RS256", "typ": "at+jwt", "kid": key["kid"]}
    assert claims["iss"] == auth_server.url and claims["sub"] == "alice" and claims["aud"] == RESOURCE
    assert claims["scope"] == "jobs:read" and claims["client_id"] == client["client_id"]
    assert claims["iat"] == claims["nbf"] and claims["exp"] - claims["iat"] == 3600 and claims["jti"]

    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
               "client_id": client["client_id"]}
    r = http.post(f"{auth_server.url}/token", data=refresh)
    assert r.status_code == 200, r.text
    again = r.json()
    assert again["refresh_token"] != tokens["refresh_token"] and again["scope"] == "jobs:read"
    _, claims2 = verify(again["access_token"], jwks)
    assert (claims2["sub"], claims2["aud"], claims2["scope"]) == ("alice", RESOURCE, "jobs:read")
    # Rotation: the old refresh token is spent.
    r = http.post(f"{auth_server.url}/token", data=refresh)
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")


def test_default_user_and_scopes(auth_server, http):
    client, code, verifier = code_for(http, auth_server)
    _, claims = verify(exchange(http, auth_server, client["client_id"], code, verifier).json()["access_token"],
                       auth_server.jwks())
    assert claims["sub"] == "dev-user" and claims["scope"] == "jobs:read jobs:write"


def test_wrong_verifier_and_code_reuse_are_invalid_grant(auth_server, http):
    client, code, verifier = code_for(http, auth_server)
    r = exchange(http, auth_server, client["client_id"], code, pkce()[0])
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")
    # A failed attempt spends the code too.
    r = exchange(http, auth_server, client["client_id"], code, verifier)
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")

    client, code, verifier = code_for(http, auth_server)
    assert exchange(http, auth_server, client["client_id"], code, verifier).status_code == 200
    r = exchange(http, auth_server, client["client_id"], code, verifier)
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")


def test_redirect_uri_must_be_registered_and_match(auth_server, http):
    client = register(http, auth_server)
    _, challenge = pkce()
    r = http.get(f"{auth_server.url}/authorize", params={
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": "http://evil.example/cb",
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s"})
    assert r.status_code == 400 and "location" not in r.headers
    r = http.get(f"{auth_server.url}/authorize", params={"client_id": "nobody", "redirect_uri": REDIRECT_URI})
    assert r.status_code == 400 and "location" not in r.headers

    client, code, verifier = code_for(http, auth_server)
    r = exchange(http, auth_server, client["client_id"], code, verifier, redirect_uri="http://127.0.0.1:33418/other")
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")


def test_authorize_errors_go_back_on_the_redirect(auth_server, http):
    client = register(http, auth_server)
    _, challenge = pkce()
    plain = authorize(http, auth_server, client["client_id"], challenge, code_challenge_method="plain")
    assert plain["error"] == "invalid_request" and plain["state"] == "st-1" and "code" not in plain
    missing = authorize(http, auth_server, client["client_id"], None)
    assert missing["error"] == "invalid_request"
    scope = authorize(http, auth_server, client["client_id"], challenge, scope="jobs:read admin")
    assert scope["error"] == "invalid_scope" and scope["iss"] == auth_server.url


def test_token_endpoint_errors(auth_server, http):
    client, code, verifier = code_for(http, auth_server)
    r = exchange(http, auth_server, client["client_id"], code, verifier, resource="http://other.example/mcp")
    assert r.json()["error"] == "invalid_target"
    r = http.post(f"{auth_server.url}/token", data={"grant_type": "password", "client_id": client["client_id"]})
    assert r.json()["error"] == "unsupported_grant_type"
    r = http.post(f"{auth_server.url}/token", data={"grant_type": "authorization_code", "client_id": "nobody"})
    assert (r.status_code, r.json()["error"]) == (401, "invalid_client")
    r = http.post(f"{auth_server.url}/token", data={"grant_type": "authorization_code",
                                                    "client_id": client["client_id"]})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_request")
    # No resource and no default audience: nothing to put in `aud`.
    client, code, verifier = code_for(http, auth_server, resource=None)
    r = exchange(http, auth_server, client["client_id"], code, verifier, resource=None)
    assert r.json()["error"] == "invalid_target"


def test_confidential_clients_authenticate_as_registered(auth_server, http):
    for method in ("client_secret_basic", "client_secret_post"):
        client = register(http, auth_server, token_endpoint_auth_method=method)
        verifier, challenge = pkce()
        code = authorize(http, auth_server, client["client_id"], challenge)["code"]
        r = exchange(http, auth_server, client["client_id"], code, verifier, client_secret="nope")
        assert (r.status_code, r.json()["error"]) == (401, "invalid_client")
        code = authorize(http, auth_server, client["client_id"], challenge)["code"]
        if method == "client_secret_post":
            r = exchange(http, auth_server, client["client_id"], code, verifier, client_secret=client["client_secret"])
        else:
            r = http.post(f"{auth_server.url}/token", auth=(client["client_id"], client["client_secret"]), data={
                "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
                "code_verifier": verifier, "resource": RESOURCE})
        assert r.status_code == 200, r.text
    # RFC 7591: absent, the method is client_secret_basic, with a secret.
    r = http.post(f"{auth_server.url}/register", json={"redirect_uris": [REDIRECT_URI]})
    assert r.json()["token_endpoint_auth_method"] == "client_secret_basic" and r.json()["client_secret"]


def test_registration_refuses_bad_metadata(auth_server, http):
    for body, error in [({}, "invalid_redirect_uri"), ({"redirect_uris": ["/relative"]}, "invalid_redirect_uri"),
                        ({"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "private_key_jwt"},
                         "invalid_client_metadata")]:
        r = http.post(f"{auth_server.url}/register", json=body)
        assert (r.status_code, r.json()["error"]) == (400, error)
    r = http.post(f"{auth_server.url}/register", content=b"{not json", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_client_metadata")


def test_rotate_replaces_the_published_key(auth_server, http):
    before = http.get(f"{auth_server.url}/jwks").json()
    old = auth_server.mint("alice", RESOURCE)
    kid = auth_server.rotate()
    after = http.get(f"{auth_server.url}/jwks").json()
    assert [k["kid"] for k in after["keys"]] == [kid] == [auth_server.current_kid] != [before["keys"][0]["kid"]]
    with pytest.raises(StopIteration):  # the old kid is no longer published
        verify(old, after)
    assert verify(auth_server.mint("alice", RESOURCE), after)[0]["kid"] == kid


def test_mint_overrides(auth_server):
    jwks = auth_server.jwks()
    _, claims = verify(auth_server.mint("bob", RESOURCE, scope="jobs:read", ttl_secs=-60, extra="x"), jwks)
    assert claims["sub"] == "bob" and claims["exp"] < time.time() and claims["extra"] == "x"
    token = auth_server.mint("bob", RESOURCE, header={"typ": "JWT", "x": 1}, iss="https://elsewhere.example", exp=None)
    header, claims = verify(token, jwks)
    assert header["typ"] == "JWT" and header["x"] == 1 and claims["iss"] == "https://elsewhere.example"
    assert "exp" not in claims
    # A server never started signs with a key no one publishes.
    stranger = AuthorizationServer()
    try:
        forged = stranger.mint("bob", RESOURCE, header={"kid": auth_server.current_kid}, iss=auth_server.url)
    finally:
        stranger.stop()
    with pytest.raises(InvalidSignature):
        verify(forged, jwks)


# --- the MCP SDK's OAuth client, through a stub resource server ---

class StubResource:
    """A protected resource at /mcp as RFC 9728 and the MCP authorization spec describe it: 401
    with resource_metadata until a valid token for it arrives. Counts its refusals and records
    the claims it accepted."""

    def __init__(self, issuer: AuthorizationServer):
        stub = self
        self.accepted: list[dict] = []
        self.refused = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, status, body, headers=()):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.startswith("/.well-known/oauth-protected-resource"):
                    return self._json(200, {"resource": stub.resource, "authorization_servers": [issuer.url],
                                            "scopes_supported": list(issuer.scopes),
                                            "bearer_methods_supported": ["header"]})
                claims = stub.check(self.headers.get("Authorization", ""), issuer)
                if claims is None:
                    stub.refused += 1
                    challenge = (f'Bearer resource_metadata="{stub.base}/.well-known/oauth-protected-resource/mcp", '
                                 f'scope="{" ".join(issuer.scopes)}"')
                    return self._json(401, {"error": "invalid_token"}, [("WWW-Authenticate", challenge)])
                stub.accepted.append(claims)
                self._json(200, {"sub": claims["sub"]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.resource = f"{self.base}/mcp"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def check(self, authorization: str, issuer: AuthorizationServer) -> dict | None:
        if not authorization.startswith("Bearer "):
            return None
        try:
            _, claims = verify(authorization[7:], httpx2.get(f"{issuer.url}/jwks").json())
        except (StopIteration, InvalidSignature, ValueError):
            return None
        ok = claims["iss"] == issuer.url and claims["aud"] == self.resource and claims["exp"] > time.time()
        return claims if ok else None

    def stop(self):
        self.httpd.shutdown()
        self.thread.join()
        self.httpd.server_close()


@pytest.fixture
def stub(auth_server):
    resource = StubResource(auth_server)
    yield resource
    resource.stop()


async def get_as(provider, url: str, times: int = 1, pause: float = 0) -> list:
    """`times` GETs of `url` through the provider, `pause` seconds apart."""
    async with httpx2.AsyncClient(auth=provider, timeout=10) as client:
        answers = [await client.get(url)]
        for _ in range(times - 1):
            await asyncio.sleep(pause)
            answers.append(await client.get(url))
        return answers


@pytest.mark.parametrize("auth_method", [None, "none", "client_secret_post"])
def test_mcp_sdk_oauth_client_completes_its_flow(stub, auth_method):
    provider = oauth_provider(stub.resource, login_hint="alice", auth_method=auth_method)
    (r,) = asyncio.run(get_as(provider, stub.resource))
    assert (r.status_code, r.json()) == (200, {"sub": "alice"})
    (claims,) = stub.accepted
    assert claims["aud"] == stub.resource and claims["scope"] == "jobs:read jobs:write"


def test_mcp_sdk_client_two_users_and_a_narrower_scope(stub):
    asyncio.run(get_as(oauth_provider(stub.resource), stub.resource))
    asyncio.run(get_as(oauth_provider(stub.resource, login_hint="bob", scope="jobs:read"), stub.resource))
    assert [(c["sub"], c["scope"]) for c in stub.accepted] == [("dev-user", "jobs:read jobs:write"),
                                                               ("bob", "jobs:read")]
    assert stub.accepted[0]["client_id"] != stub.accepted[1]["client_id"]


def test_mcp_sdk_client_refreshes_an_expired_token():
    server = AuthorizationServer(token_ttl_secs=2).start()  # whole seconds: 1 to 2 s of life
    resource = StubResource(server)
    try:
        answers = asyncio.run(get_as(oauth_provider(resource.resource), resource.resource, times=2, pause=2.1))
    finally:
        resource.stop()
        server.stop()
    assert [a.status_code for a in answers] == [200, 200]
    first, second = resource.accepted
    assert first["jti"] != second["jti"] and first["sub"] == second["sub"] == "dev-user"
    # The expired token was refreshed before use, not refused and replaced by a new authorization.
    assert resource.refused == 1
