"""moto in this process, behind a recorder, over HTTP and over HTTPS.

The recorder names every AWS call (service and operation), keeps its request so a minimal client
can replay it for the floor, times the emulator's own handling of it, and can add a fixed delay
per call to stand in for the network round trip to a regional service that a local emulator
does not have.
"""

from __future__ import annotations

import datetime
import io
import ipaddress
import logging
import re
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

SYSTEM_CA_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")


@dataclass
class Call:
    operation: str
    method: str
    target: str  # path and query
    headers: list[tuple[str, str]]
    body: bytes
    server_ms: float


def operation_of(environ: dict, body: bytes) -> str:
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        service, _, op = target.partition(".")
        service = {"DynamoDB_20120810": "DynamoDB", "AmazonSQS": "SQS"}.get(service, service)
        return f"{service} {op}"
    auth = environ.get("HTTP_AUTHORIZATION", "")
    scope = re.search(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/", auth)
    service = scope.group(1) if scope else "?"
    method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
    if service == "s3":
        has_key = path.strip("/").count("/") >= 1
        return "S3 " + {("GET", True): "GetObject", ("PUT", True): "PutObject",
                        ("HEAD", True): "HeadObject", ("GET", False): "ListObjectsV2"}.get(
            (method, has_key), f"{method} {path}")
    if path.endswith("/async-invocations"):
        return "SageMakerRuntime InvokeEndpointAsync"
    if service == "sns" or b"Action=" in body[:200]:
        action = re.search(rb"Action=(\w+)", body)
        return f"{service.upper()} {action.group(1).decode() if action else '?'}"
    return f"{service} {method} {path}"


class Recorder:
    """WSGI middleware in front of moto."""

    def __init__(self, app):
        self.app = app
        self.calls: list[Call] = []
        self.delay_s = 0.0
        self._lock = threading.Lock()

    def mark(self) -> int:
        return len(self.calls)

    def since(self, mark: int) -> list[Call]:
        with self._lock:
            return self.calls[mark:]

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        if self.delay_s:
            time.sleep(self.delay_s)
        started = time.perf_counter()
        answer = b"".join(self.app(environ, start_response))
        server_ms = (time.perf_counter() - started) * 1000
        headers = [(k[5:].replace("_", "-").title(), v) for k, v in environ.items() if k.startswith("HTTP_")]
        if environ.get("CONTENT_TYPE"):
            headers.append(("Content-Type", environ["CONTENT_TYPE"]))
        target = environ.get("RAW_URI") or environ.get("PATH_INFO", "")
        if not environ.get("RAW_URI") and environ.get("QUERY_STRING"):
            target += "?" + environ["QUERY_STRING"]
        call = Call(operation_of(environ, body), environ["REQUEST_METHOD"], target, headers, body, server_ms)
        with self._lock:
            self.calls.append(call)
        return [answer]


class Emulator:
    """moto on 127.0.0.1 over `http_endpoint` and `https_endpoint` (a CA of its own), one state."""

    def __init__(self, tls_dir: Path):
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.recorder = Recorder(DomainDispatcherApplication(create_backend_app))
        self._servers = []
        self.http_endpoint = self._serve(None)
        self.ca_bundle, cert, key = make_certificates(tls_dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.https_endpoint = self._serve(context).replace("http://", "https://")

    def _serve(self, ssl_context) -> str:
        server = make_server("127.0.0.1", 0, self.recorder, threaded=True,
                             request_handler=MotoRequestHandler, ssl_context=ssl_context)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()


def make_certificates(directory: Path) -> tuple[str, str, str]:
    """A CA and a certificate for localhost signed by it. The bundle the clients trust is the
    system's roots plus this CA, so the SDKs load as many roots as they would on Lambda."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcp-async-jobs bench CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (directory / "server.pem").write_bytes(cert.public_bytes(pem))
    (directory / "server.key").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                             serialization.NoEncryption()))
    system = next((Path(p).read_bytes() for p in SYSTEM_CA_FILES if Path(p).exists()), b"")
    (directory / "bundle.pem").write_bytes(system + b"\n" + ca.public_bytes(pem))
    return str(directory / "bundle.pem"), str(directory / "server.pem"), str(directory / "server.key")
