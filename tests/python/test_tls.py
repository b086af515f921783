"""TLS listeners with independent clients: the official Python `mcp` client (httpx2 with an
`ssl` context trusting the test's CA) over `https://`, and grpcio with
`ssl_channel_credentials` over `grpcs://`, against `mcpwire demo --transport http|grpc
--tls-cert … --tls-key …`. The CA and the server certificate are made here, at test time,
with `cryptography`; no key is checked in."""

import datetime
import ipaddress
import ssl

import grpc
import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import spawn_http_demo
from peers import text_of
from proto_peer import Served, init_request, pb, pb_grpc

pytestmark = pytest.mark.anyio


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_pki(dir_path):
    """A CA and a `localhost`/127.0.0.1 certificate it signed, as PEM files in `dir_path`:
    (ca.pem, server.crt, server.key)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("mcpwire test CA"))
        .issuer_name(_name("mcpwire test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = dir_path / "ca.pem", dir_path / "server.crt", dir_path / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return tuple(str(p) for p in paths)


@pytest.fixture()
def pki(tmp_path):
    return make_pki(tmp_path)


async def test_python_client_over_https_with_a_custom_ca(mcpwire_bin, pki):
    ca, cert, key = pki
    proc, url = spawn_http_demo(mcpwire_bin, extra=["--tls-cert", cert, "--tls-key", key])
    try:
        assert url.startswith("https://"), url
        trusted = ssl.create_default_context(cafile=ca)
        async with httpx2.AsyncClient(verify=trusted, timeout=10) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=10) as s:
                    init = await s.initialize()
                    assert init.server_info.name == "mcpwire-everything"
                    r = await s.call_tool("echo", {"text": "over https"})
                    assert text_of(r) == "over https" and not r.is_error

        # The system's trust store does not know the test CA: the handshake fails.
        with pytest.raises(httpx2.ConnectError):
            async with httpx2.AsyncClient(timeout=10) as http:
                await http.post(url, json={})
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_grpcio_over_grpcs_with_a_custom_ca(mcpwire_bin, pki):
    ca, cert, key = pki
    with Served(mcpwire_bin, "grpc", "--tls-cert", cert, "--tls-key", key) as s:
        assert s.address.startswith("grpcs://"), s.address
        with open(ca, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        target = "localhost:" + s.address.rsplit(":", 1)[1]
        with grpc.secure_channel(target, credentials) as channel:
            stub = pb_grpc.MCPServiceStub(channel)
            r = stub.Initialize(init_request(), timeout=10)
            assert r.protocol_version == "1.0.0"
            tools = stub.ListTools(pb.ListToolsRequest(), timeout=10)
            assert "echo" in {t.name for t in tools.tools}
        # A plaintext channel to the TLS port gets no answer.
        with grpc.insecure_channel(s.address.removeprefix("grpcs://")) as channel:
            with pytest.raises(grpc.RpcError) as e:
                pb_grpc.MCPServiceStub(channel).ListTools(pb.ListToolsRequest(), timeout=5)
            assert e.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
