"""A TLS front for a plaintext gRPC server (the Temporal dev server serves no TLS): it
terminates TLS (HTTP/2 by ALPN, a client certificate required when asked) and passes the
bytes on, so the tests connect to Temporal over real TLS, as to a secured cluster."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Credentials:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def make_credentials(directory: Path, server_name: str = "temporal.test") -> Credentials:
    """A CA, a server certificate for `server_name` and a client certificate, all signed by it."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("test CA"))
        .issuer_name(_name("test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(common_name: str, usage, alt_names):  # noqa: ANN001, ANN202
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    server, server_key = leaf(server_name, ExtendedKeyUsageOID.SERVER_AUTH, [x509.DNSName(server_name)])
    client, client_key = leaf("durable-responses", ExtendedKeyUsageOID.CLIENT_AUTH, None)
    paths = Credentials(
        *(directory / name for name in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key"))
    )
    paths.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.server_cert.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths.client_cert.write_bytes(client.public_bytes(serialization.Encoding.PEM))
    _write_key(server_key, paths.server_key)
    _write_key(client_key, paths.client_key)
    return paths


class TlsProxy:
    """Listens on 127.0.0.1 (a port of its own) in a thread; forwards to `target_port`."""

    def __init__(self, target_port: int, credentials: Credentials, *, require_client_cert: bool) -> None:
        self.target_port = target_port
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(credentials.server_cert, credentials.server_key)
        self.context.set_alpn_protocols(["h2"])
        if require_client_cert:
            self.context.verify_mode = ssl.CERT_REQUIRED
            self.context.load_verify_locations(credentials.ca_cert)
        self.port = 0
        self.handshakes = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tls-proxy", daemon=True)

    def start(self) -> TlsProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _close(self) -> None:
        """Stop listening and end every connection, so nothing is left pending in the loop."""
        self._server.close()
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.context)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handshakes += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, ssl.SSLError):
                pass
            finally:
                sink.close()

        try:
            await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        finally:
            writer.close()
            upstream_writer.close()
