"""moto in this process, behind a recorder, over HTTP and over HTTPS.

The recorder names every AWS call (service and operation), keeps its request so a minimal client
can replay it for the floor, and times the emulator's own handling of it. With `sizing` on it
also records what AWS bills by size (cost.py): each DynamoDB item before and after a write, each
item a read returns. FixedLatencyAws stands in for services that answer many calls at once, each
after a network round trip.
"""

from __future__ import annotations

import datetime
import io
import ipaddress
import json
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from cost import item_size
from runtime_api import read_body, read_head

SYSTEM_CA_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
# This machine's CA bundle, as one file.
SYSTEM_ROOTS = next((p for p in SYSTEM_CA_FILES if Path(p).exists()), None)


@dataclass
class Call:
    operation: str
    method: str
    target: str  # path and query
    headers: list[tuple[str, str]]
    body: bytes
    server_ms: float
    response_bytes: int = 0
    status: int = 200
    # DynamoDB, with Recorder.sizing: the item's size (DynamoDB's rules) before and after a
    # write (None: no item), and the size of each item a read returned.
    old_size: int | None = None
    new_size: int | None = None
    read_sizes: list[int] = field(default_factory=list)
    consistent: bool = False
    done_ns: int = 0  # time.perf_counter_ns() when moto had answered it
    # A stream's GetRecords: the records it returned (a mapping's reads of an idle stream return none).
    records: int = 0

    @property
    def request_bytes(self) -> int:
        return len(self.body)


def operation_of(environ: dict, body: bytes) -> str:
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        service, _, op = target.partition(".")
        service = {"DynamoDB_20120810": "DynamoDB", "DynamoDBStreams_20120810": "DynamoDB Streams",
                   "AmazonSQS": "SQS"}.get(service, service)
        return f"{service} {op}"
    # Signed in a header, or presigned in the query.
    auth = environ.get("HTTP_AUTHORIZATION") or urllib.parse.unquote(environ.get("QUERY_STRING", ""))
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


DYNAMODB_WRITES = ("DynamoDB PutItem", "DynamoDB UpdateItem", "DynamoDB DeleteItem")
# Calls moto does not implement, answered here: a run's steps (check_training_status lists them).
CANNED = {"SageMaker ListPipelineExecutionSteps": b'{"PipelineExecutionSteps": []}'}


def canned_app(body: bytes):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.1"), ("Content-Length", str(len(body)))])
        return [body]
    return app


def region_of(environ: dict) -> str:
    scope = re.search(r"Credential=[^/]+/[^/]+/([^/]+)/", environ.get("HTTP_AUTHORIZATION", ""))
    return scope.group(1) if scope else "us-east-1"


def stored_size(region: str, request: dict) -> int | None:
    """The size of the item a DynamoDB write names, as stored in moto now (None: no item)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
    table = backend.get_table(request["TableName"])
    named = request.get("Key") or request["Item"]
    keys = {k: named[k] for k in (table.hash_key_attr, table.range_key_attr) if k}
    item = backend.get_item(request["TableName"], keys)
    return item_size(item.to_json()["Attributes"]) if item else None


class Recorder:
    """WSGI middleware in front of moto."""

    def __init__(self, app):
        self.app = app
        self.calls: list[Call] = []
        self.sizing = False  # off while latency is measured: the lookups take time of their own
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
        operation = operation_of(environ, body)
        sized = self.sizing and operation.startswith("DynamoDB ")
        request = json.loads(body) if sized and body else {}
        old = stored_size(region_of(environ), request) if sized and operation in DYNAMODB_WRITES else None
        status = []

        def recorded_start_response(line, response_headers, exc_info=None):
            status.append(int(line.split()[0]))
            return start_response(line, response_headers, exc_info)

        app = canned_app(CANNED[operation]) if operation in CANNED else self.app
        started = time.perf_counter()
        answer = b"".join(app(environ, recorded_start_response))
        server_ms = (time.perf_counter() - started) * 1000
        done_ns = time.perf_counter_ns()
        headers = [(k[5:].replace("_", "-").title(), v) for k, v in environ.items() if k.startswith("HTTP_")]
        if environ.get("CONTENT_TYPE"):
            headers.append(("Content-Type", environ["CONTENT_TYPE"]))
        call = Call(operation, environ["REQUEST_METHOD"], environ["RAW_URI"], headers, body, server_ms,
                    response_bytes=len(answer), status=status[0] if status else 0, done_ns=done_ns)
        if operation == "DynamoDB Streams GetRecords" and call.status == 200:
            call.records = len(json.loads(answer).get("Records", []))
        if sized:
            call.consistent = bool(request.get("ConsistentRead"))
            if operation in DYNAMODB_WRITES:
                call.old_size, call.new_size = old, stored_size(region_of(environ), request)
            elif operation in ("DynamoDB GetItem", "DynamoDB Query") and call.status == 200:
                got = json.loads(answer)
                items = [got["Item"]] if "Item" in got else got.get("Items", [])
                call.read_sizes = [item_size(i) for i in items]
            elif operation == "DynamoDB BatchGetItem" and call.status == 200:
                # Billed per key asked for, as a GetItem each: an item missing is still a read.
                asked = request.get("RequestItems", {})
                got = json.loads(answer).get("Responses", {})
                call.consistent = any(t.get("ConsistentRead") for t in asked.values())
                sizes = [item_size(i) for items in got.values() for i in items]
                call.read_sizes = sizes + [0] * (sum(len(t.get("Keys", [])) for t in asked.values()) - len(sizes))
        with self._lock:
            self.calls.append(call)
        return [answer]


class KeepAliveServer:
    """Serves a WSGI app on 127.0.0.1 with HTTP/1.1 keep-alive, a thread per connection,
    TCP_NODELAY and one write per response. werkzeug's server, moto's usual one, closes every
    connection after one response, so each AWS call would pay a new connection (and over
    HTTPS a new handshake) that a client of the real services does not."""

    def __init__(self, app, ssl_context: ssl.SSLContext | None = None):
        self.app, self.ssl_context = app, ssl_context
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, peer = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn, peer), daemon=True).start()

    def _serve(self, conn: socket.socket, peer) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if self.ssl_context:
                conn = self.ssl_context.wrap_socket(conn, server_side=True)
            reader = conn.makefile("rb")
            while True:
                head = read_head(reader)
                if head is None:
                    return
                start, headers = head
                method, target, _ = start.split(" ", 2)
                if headers.get("expect", "").lower() == "100-continue":
                    conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = read_body(reader, headers)
                conn.sendall(self._respond(method, target, headers, body, peer))
        except (OSError, ValueError, ssl.SSLError):
            return
        finally:
            conn.close()

    def _respond(self, method, target, headers, body, peer) -> bytes:
        path, _, query = target.partition("?")
        environ = {
            "REQUEST_METHOD": method, "SCRIPT_NAME": "", "QUERY_STRING": query, "RAW_URI": target,
            "REQUEST_URI": target,
            "PATH_INFO": urllib.parse.unquote_to_bytes(path).decode("latin-1"),
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": str(self.port), "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": peer[0], "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0), "wsgi.url_scheme": "https" if self.ssl_context else "http",
            "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
            "wsgi.multiprocess": False, "wsgi.run_once": False,
        }
        for name, value in headers.items():
            key = name.upper().replace("-", "_")
            if key == "CONTENT_TYPE":
                environ["CONTENT_TYPE"] = value
            elif key != "CONTENT_LENGTH":
                environ["HTTP_" + key] = value
        answer: dict = {}

        def start_response(status, response_headers, exc_info=None):
            answer["status"], answer["headers"] = status, response_headers

        out = b"".join(self.app(environ, start_response))
        head = [f"HTTP/1.1 {answer['status']}"]
        head += [f"{k}: {v}" for k, v in answer["headers"] if k.lower() not in ("content-length", "connection",
                                                                                "transfer-encoding")]
        head.append(f"Content-Length: {len(out)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (b"" if method == "HEAD" else out)

    def stop(self) -> None:
        self._closed = True
        self._listener.close()


class FixedLatencyAws:
    """Answers S3 GetObject (with `object_body`) and DynamoDB UpdateItem (no previous item)
    with a canned success after a fixed delay, many at once. It measures what a function's
    concurrency buys against services that, unlike moto, serve calls in parallel."""

    def __init__(self, object_body: bytes, delay_s: float):
        self.object_body, self.delay_s, self.calls = object_body, delay_s, 0
        self._lock = threading.Lock()
        self._server = KeepAliveServer(self)
        self.endpoint = f"http://127.0.0.1:{self._server.port}"

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length:
            environ["wsgi.input"].read(length)
        with self._lock:
            self.calls += 1
        time.sleep(self.delay_s)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target.endswith(".UpdateItem"):
            body = b"{}"
            start_response("200 OK", [("Content-Type", "application/x-amz-json-1.0"),
                                      ("x-amz-crc32", str(zlib.crc32(body))), ("Content-Length", str(len(body)))])
        elif environ["REQUEST_METHOD"] == "GET":
            body = self.object_body
            start_response("206 Partial Content", [
                ("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                ("Content-Range", f"bytes 0-{len(body) - 1}/{len(body)}"), ("ETag", '"bench"'),
                ("Last-Modified", "Mon, 30 Nov 2026 00:00:00 GMT")])
        else:
            body = b'{"__type": "ValidationException", "message": "not served here"}'
            start_response("400 Bad Request", [("Content-Type", "application/x-amz-json-1.0"),
                                               ("Content-Length", str(len(body)))])
        return [body]

    def stop(self) -> None:
        self._server.stop()


class Emulator:
    """moto on 127.0.0.1 over `http_endpoint` and `https_endpoint` (a CA of its own), one state."""

    def __init__(self, tls_dir: Path):
        self.recorder = Recorder(DomainDispatcherApplication(create_backend_app))
        self._servers = []
        self.http_endpoint = self._serve(None)
        self.ca_bundle, cert, key = make_certificates(tls_dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.https_endpoint = self._serve(context).replace("http://", "https://")

    def _serve(self, ssl_context) -> str:
        server = KeepAliveServer(self.recorder, ssl_context)
        self._servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    def stop(self) -> None:
        for server in self._servers:
            server.stop()


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
    system = Path(SYSTEM_ROOTS).read_bytes() if SYSTEM_ROOTS else b""
    (directory / "bundle.pem").write_bytes(system + b"\n" + ca.public_bytes(pem))
    return str(directory / "bundle.pem"), str(directory / "server.pem"), str(directory / "server.key")
