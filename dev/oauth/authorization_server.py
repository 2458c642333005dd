#!/usr/bin/env python3
"""A small OAuth 2.1 authorization server for local development and tests; never deployed.

It lets `make serve AUTH=oauth` and the tests exercise mcp-tools' resource-server mode without a
real identity provider: authorization server metadata (RFC 8414), JWKS, dynamic client
registration (RFC 7591), the authorization code grant with PKCE S256 only, resource indicators
(RFC 8707), the `iss` authorization response parameter (RFC 9207) and rotating refresh tokens.
Access tokens are RS256 JWTs (RFC 9068). /authorize approves at once, as the user named by
`login_hint` (default `dev-user`), so a test can act as several users. It binds 127.0.0.1 only
and keeps everything in memory.

    python dev/oauth/authorization_server.py [--port N] [--audience URL]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import html
import json
import re
import secrets
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

CODE_TTL_SECS = 60
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
GRANT_TYPES = ("authorization_code", "refresh_token")
MAX_BODY = 64 * 1024
PKCE_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")
S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint_b64(n: int) -> str:
    return b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))


def s256(verifier: str) -> str:
    """The PKCE S256 challenge of a verifier (RFC 7636 §4.2)."""
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


class OAuthError(Exception):
    """An RFC 6749 error answer: `error`, its description and the HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400):
        super().__init__(description)
        self.error, self.description, self.status = error, description, status


@dataclass
class Client:
    client_id: str
    secret: str | None
    auth_method: str
    redirect_uris: list[str]
    grant_types: list[str]


@dataclass
class Grant:
    """What an authorization code or a refresh token stands for."""

    client_id: str
    sub: str
    scope: str
    resource: str | None
    redirect_uri: str = ""
    challenge: str = ""
    expires_at: float = 0.0


def _valid_uri(uri: Any) -> bool:
    """An absolute URI without a fragment, as redirect URIs and resource indicators must be."""
    if not isinstance(uri, str):
        return False
    parts = urlsplit(uri)
    return bool(parts.scheme and (parts.netloc or parts.path)) and "#" not in uri


def _redirect_matches(registered: str, given: str) -> bool:
    """Exact match, except that a loopback http redirect may use any port (RFC 8252 §7.3)."""
    if registered == given:
        return True
    a, b = urlsplit(registered), urlsplit(given)
    loopback = a.scheme == "http" and a.hostname in ("127.0.0.1", "::1", "localhost")
    return loopback and (a.scheme, a.hostname, a.path, a.query) == (b.scheme, b.hostname, b.path, b.query)


class AuthorizationServer:
    """The authorization server on 127.0.0.1:`port` (0: a free port). It binds at once, so `url`
    and `mint()` work before `start()`; an instance never started is a handy forger of tokens
    signed by a key no other server publishes."""

    def __init__(self, port: int = 0, scopes: tuple[str, ...] = ("jobs:read", "jobs:write", "jobs:approve"),
                 token_ttl_secs: int = 3600, default_audience: str | None = None, log_requests: bool = False,
                 approvers: tuple[str, ...] = ()):
        self.scopes = tuple(scopes)
        # The approval scope is a person's, as an issuer gives it to a group of users: granted to
        # the `approvers` subjects (with whatever they asked), never to anyone else, asked or not.
        self.person_scopes = tuple(s for s in self.scopes if s == "jobs:approve")
        self.approvers = tuple(approvers)
        self.token_ttl_secs = token_ttl_secs
        self.default_audience = default_audience
        self.log_requests = log_requests
        self._lock = threading.Lock()
        self._clients: dict[str, Client] = {}
        self._codes: dict[str, Grant] = {}
        self._refresh: dict[str, Grant] = {}
        self.private_key: rsa.RSAPrivateKey
        self.current_kid = ""
        self.rotate()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.authorization_server = self  # type: ignore[attr-defined]
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> AuthorizationServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="oauth-as", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> AuthorizationServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # keys and tokens

    def rotate(self) -> str:
        """A new 2048-bit key, with a new kid, becomes the signing key; JWKS lists only it, so
        tokens signed before are no longer verifiable (what a resource server's refetch meets)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        nums = key.public_key().public_numbers()
        # The kid is the key's RFC 7638 thumbprint.
        canonical = json.dumps({"e": _uint_b64(nums.e), "kty": "RSA", "n": _uint_b64(nums.n)},
                               separators=(",", ":"), sort_keys=True)
        with self._lock:
            self.private_key = key
            self.current_kid = b64url(hashlib.sha256(canonical.encode()).digest())
            return self.current_kid

    def public_jwk(self) -> dict:
        nums = self.private_key.public_key().public_numbers()
        return {"kty": "RSA", "kid": self.current_kid, "alg": "RS256", "use": "sig",
                "n": _uint_b64(nums.n), "e": _uint_b64(nums.e)}

    def mint(self, sub: str, aud: str, scope: str = "jobs:read jobs:write", ttl_secs: int = 300,
             header: dict | None = None, **claims: Any) -> str:
        """An access token signed with the current key. `header` and `claims` override or add
        fields, and a field set to None is left out, so tests can forge expired, foreign,
        audience-less or oddly headed tokens."""
        now = int(time.time())
        body: dict[str, Any] = {"iss": self.url, "sub": sub, "aud": aud, "scope": scope, "client_id": "dev-mint",
                                "iat": now, "nbf": now, "exp": now + ttl_secs, "jti": secrets.token_urlsafe(16)}
        head: dict[str, Any] = {"alg": "RS256", "typ": "at+jwt", "kid": self.current_kid}
        head.update(header or {})
        body.update(claims)
        return self._sign({k: v for k, v in head.items() if v is not None},
                          {k: v for k, v in body.items() if v is not None})

    def _sign(self, header: dict, claims: dict) -> str:
        def part(d: dict) -> str:
            return b64url(json.dumps(d, separators=(",", ":")).encode())

        signing_input = f"{part(header)}.{part(claims)}"
        signature = self.private_key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{b64url(signature)}"

    # documents

    def metadata(self) -> dict:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "registration_endpoint": f"{self.url}/register",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": list(GRANT_TYPES),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "scopes_supported": list(self.scopes),
            "authorization_response_iss_parameter_supported": True,
        }

    def jwks(self) -> dict:
        with self._lock:
            return {"keys": [self.public_jwk()]}

    # endpoints (each returns what the handler sends)

    def register(self, meta: Any) -> dict:
        """RFC 7591 §3: registers a client; raises OAuthError for bad metadata."""
        if not isinstance(meta, dict):
            raise OAuthError("invalid_client_metadata", "the body must be a JSON object")
        uris = meta.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(_valid_uri(u) for u in uris):
            raise OAuthError("invalid_redirect_uri", "redirect_uris must be a list of absolute URIs without fragment")
        method = meta.get("token_endpoint_auth_method", "client_secret_basic")
        grants = meta.get("grant_types", ["authorization_code"])
        if method not in AUTH_METHODS:
            raise OAuthError("invalid_client_metadata", f"token_endpoint_auth_method must be one of {AUTH_METHODS}")
        if not isinstance(grants, list) or not all(g in GRANT_TYPES for g in grants):
            raise OAuthError("invalid_client_metadata", f"grant_types must be among {GRANT_TYPES}")
        if meta.get("response_types", ["code"]) != ["code"]:
            raise OAuthError("invalid_client_metadata", 'response_types must be ["code"]')
        if "scope" in meta and not isinstance(meta["scope"], str):
            raise OAuthError("invalid_client_metadata", "scope must be a string")
        self._check_scope(meta.get("scope"), "invalid_client_metadata")
        client = Client(secrets.token_urlsafe(16), None if method == "none" else secrets.token_urlsafe(32),
                        method, list(uris), list(grants))
        with self._lock:
            self._clients[client.client_id] = client
        echoed = {k: v for k, v in meta.items() if not k.startswith(("client_secret", "registration_"))}
        answer = {**echoed, "client_id": client.client_id, "client_id_issued_at": int(time.time()),
                  "redirect_uris": client.redirect_uris, "grant_types": client.grant_types,
                  "response_types": ["code"], "token_endpoint_auth_method": method}
        if client.secret is not None:
            answer.update(client_secret=client.secret, client_secret_expires_at=0)
        return answer

    def authorize(self, q: dict[str, str]) -> str:
        """The redirect (Location) answering an authorization request. Raises OAuthError for a
        request that cannot be sent back to a trustworthy redirect URI."""
        client = self._clients.get(q.get("client_id", ""))
        if client is None:
            raise OAuthError("invalid_client", "unknown client_id")
        redirect = q.get("redirect_uri", "")
        if not any(_redirect_matches(r, redirect) for r in client.redirect_uris):
            raise OAuthError("invalid_request", "redirect_uri is not one registered for this client")
        back = {"state": q["state"]} if "state" in q else {}
        try:
            if q.get("response_type") != "code":
                raise OAuthError("unsupported_response_type", "response_type must be code")
            if "authorization_code" not in client.grant_types:
                raise OAuthError("unauthorized_client", "the client did not register the authorization_code grant")
            if not q.get("code_challenge"):
                raise OAuthError("invalid_request", "code_challenge is required (PKCE)")
            if q.get("code_challenge_method") != "S256":
                raise OAuthError("invalid_request", "code_challenge_method must be S256 (plain is refused)")
            if not S256_CHALLENGE.fullmatch(q["code_challenge"]):
                raise OAuthError("invalid_request", "code_challenge is not an S256 challenge")
            scope = self._person_scope(self._check_scope(q.get("scope"), "invalid_scope"),
                                       q.get("login_hint") or "dev-user")
            resource = q.get("resource")
            if resource is not None and not _valid_uri(resource):
                raise OAuthError("invalid_target", "resource must be an absolute URI without fragment")
        except OAuthError as e:
            back.update(error=e.error, error_description=e.description)
        else:
            code = secrets.token_urlsafe(32)
            with self._lock:
                self._codes[code] = Grant(client.client_id, q.get("login_hint") or "dev-user", scope, resource,
                                          redirect, q["code_challenge"], time.time() + CODE_TTL_SECS)
            back = {"code": code, **back}
        back["iss"] = self.url
        return f"{redirect}{'&' if '?' in redirect else '?'}{urlencode(back)}"

    def token(self, form: dict[str, str], authorization: str | None) -> dict:
        """The token endpoint's JSON answer; raises OAuthError (RFC 6749 §5.2)."""
        client = self._authenticate(form, authorization)
        grant_type = form.get("grant_type")
        if grant_type not in GRANT_TYPES:
            raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
        if grant_type not in client.grant_types:
            raise OAuthError("unauthorized_client", f"the client did not register the {grant_type} grant")
        if grant_type == "authorization_code":
            grant = self._redeem_code(client, form)
        else:
            grant = self._redeem_refresh(client, form)
        resource = form.get("resource")
        if resource is not None and grant.resource is not None and resource != grant.resource:
            raise OAuthError("invalid_target", "resource differs from the one authorized")
        grant.resource = grant.resource or resource
        audience = grant.resource or self.default_audience
        if audience is None:
            raise OAuthError("invalid_target", "no resource given and this server has no default audience")
        access = self.mint(grant.sub, audience, grant.scope, self.token_ttl_secs, client_id=client.client_id)
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": self.token_ttl_secs,
                  "scope": grant.scope}
        if "refresh_token" in client.grant_types:
            refresh = secrets.token_urlsafe(32)
            with self._lock:
                self._refresh[refresh] = Grant(client.client_id, grant.sub, grant.scope, grant.resource)
            answer["refresh_token"] = refresh
        return answer

    # helpers

    def _person_scope(self, scope: str, sub: str) -> str:
        """`scope` as granted to `sub`: the person scopes added for an approver, dropped for anyone else."""
        kept = [s for s in scope.split() if s not in self.person_scopes]
        if sub in self.approvers:
            kept += list(self.person_scopes)
        return " ".join(kept)

    def _check_scope(self, scope: str | None, error: str) -> str:
        if scope is None:
            return " ".join(s for s in self.scopes if s not in self.person_scopes)
        unknown = [s for s in scope.split() if s not in self.scopes]
        if unknown or not scope.split():
            raise OAuthError(error, f"unknown scope {' '.join(unknown)!r}; supported: {' '.join(self.scopes)}")
        return " ".join(scope.split())

    def _authenticate(self, form: dict[str, str], authorization: str | None) -> Client:
        """The client, authenticated the way it registered (RFC 6749 §2.3)."""
        if authorization and authorization.lower().startswith("basic "):
            try:
                raw_id, _, raw_secret = base64.b64decode(authorization[6:], validate=True).decode().partition(":")
            except ValueError:
                raise OAuthError("invalid_client", "malformed Basic credentials", 401) from None
            client_id, secret, method = unquote_plus(raw_id), unquote_plus(raw_secret), "client_secret_basic"
            if form.get("client_id", client_id) != client_id:
                raise OAuthError("invalid_request", "client_id differs from the Basic credentials")
        elif "client_secret" in form:
            client_id, secret, method = form.get("client_id", ""), form["client_secret"], "client_secret_post"
        else:
            client_id, secret, method = form.get("client_id", ""), None, "none"
        if not client_id:
            raise OAuthError("invalid_request", "client_id is required")
        client = self._clients.get(client_id)
        if client is None or client.auth_method != method:
            raise OAuthError("invalid_client", "unknown client or wrong client authentication method", 401)
        if client.secret is not None and not hmac.compare_digest(client.secret.encode(), (secret or "").encode()):
            raise OAuthError("invalid_client", "client authentication failed", 401)
        return client

    def _redeem_code(self, client: Client, form: dict[str, str]) -> Grant:
        for name in ("code", "redirect_uri", "code_verifier"):
            if not form.get(name):
                raise OAuthError("invalid_request", f"{name} is required")
        with self._lock:
            grant = self._codes.pop(form["code"], None)  # single use, even when the rest is wrong
        if grant is None or grant.client_id != client.client_id or grant.expires_at < time.time():
            raise OAuthError("invalid_grant", "unknown, used or expired authorization code")
        if form["redirect_uri"] != grant.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request's")
        if not PKCE_VERIFIER.fullmatch(form["code_verifier"]):
            raise OAuthError("invalid_grant", "code_verifier is not 43 to 128 unreserved characters")
        if not hmac.compare_digest(s256(form["code_verifier"]).encode(), grant.challenge.encode()):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
        return grant

    def _redeem_refresh(self, client: Client, form: dict[str, str]) -> Grant:
        if not form.get("refresh_token"):
            raise OAuthError("invalid_request", "refresh_token is required")
        with self._lock:
            grant = self._refresh.get(form["refresh_token"])
            if grant is None or grant.client_id != client.client_id:
                raise OAuthError("invalid_grant", "unknown or used refresh token")
            scope = self._check_scope(form.get("scope", grant.scope), "invalid_scope")
            if not set(scope.split()) <= set(grant.scope.split()):
                raise OAuthError("invalid_scope", "a refresh cannot widen the scope")
            del self._refresh[form["refresh_token"]]  # rotation: each refresh token works once
        grant.scope = scope
        return grant


class _Handler(BaseHTTPRequestHandler):
    server_version = "dev-oauth-as"

    @property
    def auth_server(self) -> AuthorizationServer:
        return self.server.authorization_server  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the default lines quote the request line, whose query may carry a code."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Method, path and status only, and only when asked for."""
        if self.auth_server.log_requests:
            path = urlsplit(getattr(self, "path", "") or "").path
            sys.stderr.write(f"oauth-as: {getattr(self, 'command', '')} {path} {code}\n")

    def _send(self, status: int, body: Any, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, e: OAuthError, headers: dict[str, str] | None = None) -> None:
        self._send(e.status, {"error": e.error, "error_description": e.description}, headers=headers)

    def _params(self, raw: str) -> dict[str, str]:
        parsed = parse_qs(raw, keep_blank_values=True)
        if any(len(v) > 1 for v in parsed.values()):
            raise OAuthError("invalid_request", "a parameter is repeated")
        return {k: v[0] for k, v in parsed.items()}

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise OAuthError("invalid_request", "request body too large", 413)
        return self.rfile.read(length)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            self._send(200, self.auth_server.metadata())
        elif url.path == "/jwks":
            self._send(200, self.auth_server.jwks())
        elif url.path == "/authorize":
            try:
                location = self.auth_server.authorize(self._params(url.query))
            except OAuthError as e:
                reason = f"{html.escape(e.error)}: {html.escape(e.description)}"
                page = f"<h1>Authorization request refused</h1><p>{reason}</p>"
                self._send(400, page, "text/html; charset=utf-8")
            else:
                self._send(302, "", "text/plain", {"Location": location})
        else:
            self._error(OAuthError("not_found", f"no such endpoint {url.path}", 404))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        try:
            if path == "/register":
                try:
                    meta = json.loads(self._body() or b"null")
                except ValueError:
                    raise OAuthError("invalid_client_metadata", "the body is not JSON") from None
                self._send(201, self.auth_server.register(meta))
            elif path == "/token":
                form = self._params(self._body().decode("utf-8", "replace"))
                self._send(200, self.auth_server.token(form, self.headers.get("Authorization")),
                           headers={"Pragma": "no-cache"})
            else:
                raise OAuthError("not_found", f"no such endpoint {path}", 404)
        except OAuthError as e:
            basic = e.status == 401 and (self.headers.get("Authorization") or "").lower().startswith("basic ")
            self._error(e, {"WWW-Authenticate": 'Basic realm="dev-oauth-as"'} if basic else None)


def main() -> int:
    parser = argparse.ArgumentParser(description="A local OAuth 2.1 authorization server, for development only.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--audience", help="the aud of tokens whose request names no resource")
    args = parser.parse_args()
    server = AuthorizationServer(args.port, default_audience=args.audience, log_requests=True).start()
    try:
        print(f"OAuth authorization server (dev only): {server.url}", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
