"""TLS between the tiers, on real sockets with a throwaway CA (trustme): the gateway serves
HTTPS, clients that do not trust the CA fail, node routes require a client certificate signed
by the CA (mutual TLS), and a real `hybridinfer node` registers and serves over TLS."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from hybridinfer.settings import Settings
from tests.conftest import ADMIN_KEY, NODE_TOKEN, auth
from tests.gatewayserver import running_gateway
from tests.peers import free_port, node_process, require

pytestmark = pytest.mark.integration

REGISTRATION = {"id": "edge-tls", "tier": "edge", "zone": "private", "url": "https://127.0.0.1:9"}


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    node_cert: Path
    node_key: Path
    rogue_cert: Path
    rogue_key: Path


def _write_pair(cert: object, directory: Path, name: str) -> tuple[Path, Path]:
    chain, key = directory / f"{name}.pem", directory / f"{name}.key"
    cert.cert_chain_pems[0].write_to_path(str(chain))  # type: ignore[attr-defined]
    cert.private_key_pem.write_to_path(str(key))  # type: ignore[attr-defined]
    return chain, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    trustme = require("trustme")
    directory = tmp_path_factory.mktemp("pki")
    ca, rogue_ca = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    server = _write_pair(ca.issue_cert("127.0.0.1", "localhost"), directory, "gateway")
    node = _write_pair(ca.issue_cert("127.0.0.1", "node.test"), directory, "node")
    rogue = _write_pair(rogue_ca.issue_cert("127.0.0.1", "rogue.test"), directory, "rogue")
    return Pki(directory / "ca.pem", *server, *node, *rogue)


@pytest.fixture(scope="module")
def gateway(pki: Pki, models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("tls-gateway"),
        models_dir=models_dir,
        port=free_port(),
        bootstrap_key=SecretStr(ADMIN_KEY),
        node_token=SecretStr(NODE_TOKEN),
        tls_cert_file=pki.server_cert,
        tls_key_file=pki.server_key,
        tls_ca_file=pki.ca,
        tls_client_cert_file=pki.server_cert,  # how the gateway proves itself to nodes
        tls_client_key_file=pki.server_key,
        node_mtls=True,
        heartbeat_interval_s=1.0,
    )
    with running_gateway(settings):
        yield f"https://127.0.0.1:{settings.port}"


def client(pki: Pki, cert: tuple[Path, Path] | None = None) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    return httpx.Client(verify=context, timeout=10)


def test_clients_that_trust_the_ca_get_https(gateway: str, pki: Pki) -> None:
    with client(pki) as trusted:
        assert trusted.get(gateway + "/healthz").status_code == 200
        infer = trusted.post(
            gateway + "/v1/infer",
            headers=auth(),
            json={"task": "sentiment", "inputs": {"text": "great"}},
        )
        assert infer.status_code == 200


def test_a_client_that_does_not_trust_the_ca_fails(gateway: str) -> None:
    with httpx.Client(timeout=5) as system_cas, pytest.raises(httpx.ConnectError):
        system_cas.get(gateway + "/healthz")
    plain = gateway.replace("https://", "http://")
    with httpx.Client(timeout=5) as cleartext, pytest.raises(httpx.HTTPError):
        cleartext.get(plain + "/healthz")


def test_node_registration_needs_a_certificate_signed_by_the_ca(gateway: str, pki: Pki) -> None:
    with client(pki) as no_certificate:
        refused = no_certificate.post(
            gateway + "/v1/nodes", headers=auth(NODE_TOKEN), json=REGISTRATION
        )
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "client_certificate_required"
    with client(pki, (pki.rogue_cert, pki.rogue_key)) as rogue, pytest.raises(httpx.HTTPError):
        rogue.post(gateway + "/v1/nodes", headers=auth(NODE_TOKEN), json=REGISTRATION)
    with client(pki, (pki.node_cert, pki.node_key)) as node:
        without_token = node.post(gateway + "/v1/nodes", json=REGISTRATION)
        assert without_token.status_code == 401
        accepted = node.post(gateway + "/v1/nodes", headers=auth(NODE_TOKEN), json=REGISTRATION)
        assert accepted.status_code == 201


def _node_env(pki: Pki, cert: Path, key: Path) -> dict[str, str]:
    return {
        "HYBRIDINFER_NODE_TOKEN": NODE_TOKEN,
        "HYBRIDINFER_NODE_TLS_CERT_FILE": str(cert),
        "HYBRIDINFER_NODE_TLS_KEY_FILE": str(key),
        "HYBRIDINFER_NODE_TLS_CA_FILE": str(pki.ca),
    }


def _nodes(gateway: str, pki: Pki) -> dict[str, dict[str, object]]:
    with client(pki) as admin:
        return {
            n["id"]: n for n in admin.get(gateway + "/v1/nodes", headers=auth()).json()["nodes"]
        }


def _wait_for_node(gateway: str, pki: Pki, node_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if node_id in _nodes(gateway, pki):
            return True
        time.sleep(0.2)
    return False


def test_a_real_node_registers_and_serves_over_mutual_tls(
    gateway: str, pki: Pki, models_dir: Path
) -> None:
    args = ["--id", "cloud-tls", "--tier", "cloud", "--zone", "public"]
    args += ["--models", "sentiment-large", "--models-dir", str(models_dir)]
    args += ["--control-plane", gateway, "--heartbeat-interval", "1"]
    env = _node_env(pki, pki.node_cert, pki.node_key)
    env["HYBRIDINFER_NODE_TLS_REQUIRE_CLIENT_CERT"] = "true"
    trusting = ssl.create_default_context(cafile=str(pki.ca))
    trusting.load_cert_chain(str(pki.server_cert), str(pki.server_key))
    with node_process(*args, env=env, context=trusting) as node_url:
        assert _wait_for_node(gateway, pki, "cloud-tls", 30)
        # the node's models answer only callers with a certificate from the CA
        with client(pki) as anonymous, pytest.raises(httpx.HTTPError):
            anonymous.get(node_url + "/v2/health/ready")
        assert str(_nodes(gateway, pki)["cloud-tls"]["url"]).startswith("https://")
        with client(pki) as caller:
            answer = caller.post(
                gateway + "/v1/infer",
                headers=auth(),
                json={
                    "task": "sentiment",
                    "inputs": {"text": "great"},
                    "options": {"route": "cloud"},
                },
            )
        assert answer.status_code == 200, answer.text
        assert answer.json()["subtasks"][0]["node"] == "cloud-tls"


def test_a_node_with_an_untrusted_certificate_never_registers(
    gateway: str, pki: Pki, models_dir: Path
) -> None:
    args = ["--id", "rogue-node", "--tier", "edge", "--zone", "private"]
    args += ["--models", "sentiment-small", "--models-dir", str(models_dir)]
    args += ["--control-plane", gateway]
    env = _node_env(pki, pki.rogue_cert, pki.rogue_key)
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE  # the rogue node's own certificate is not ours
    with node_process(*args, env=env, context=unverified):
        assert not _wait_for_node(gateway, pki, "rogue-node", 6)
