"""The official MCP SDK's OAuth client, set up to run its whole flow unattended against the
development authorization server (dev/oauth/authorization_server.py), which approves at once:
the "browser" step is one GET of the authorization URL whose redirect is read, not followed."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

# Never listened on: the redirect is parsed, not followed.
REDIRECT_URI = "http://127.0.0.1:33418/callback"


class MemoryTokenStorage:
    """The SDK's TokenStorage in memory: each provider is a fresh client of its own."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def _with_params(url: str, **params: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    return urlunsplit(parts._replace(query=urlencode({**query, **params})))


def oauth_provider(server_url: str, login_hint: str = "dev-user", scope: str | None = None,
                   auth_method: str | None = None) -> OAuthClientProvider:
    """An httpx2 auth for the MCP server at `server_url` that discovers its authorization server,
    registers (dynamically, with `auth_method`; None leaves it to the server), authorizes as
    `login_hint` and exchanges the code. `scope` replaces the scope the SDK would ask for (it
    takes the resource's challenge or metadata otherwise)."""
    pending: list[AuthorizationCodeResult] = []

    async def redirect_handler(authorization_url: str) -> None:
        params = {"login_hint": login_hint, **({"scope": scope} if scope is not None else {})}
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            response = await http.get(_with_params(authorization_url, **params))
        if response.status_code != 302:
            raise OAuthFlowError(f"authorization endpoint answered {response.status_code}: {response.text}")
        answer = {k: v[0] for k, v in parse_qs(urlsplit(response.headers["location"]).query).items()}
        if "error" in answer:
            raise OAuthFlowError(f"authorization refused: {answer['error']}: {answer.get('error_description')}")
        pending.append(AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss")))

    async def callback_handler() -> AuthorizationCodeResult:
        return pending.pop()

    metadata = OAuthClientMetadata(client_name="mcp-tools tests", redirect_uris=[REDIRECT_URI],
                                   scope=scope, token_endpoint_auth_method=auth_method)
    return OAuthClientProvider(server_url, metadata, MemoryTokenStorage(), redirect_handler, callback_handler)
