"""Acceptance: NVIDIA's gRPC client (tritonclient[grpc], raw binary contents) against a real
node process, plain and over TLS and mutual TLS.

tritonclient[grpc] pins protobuf below 7, ours is 7: it lives in its own venv under
``.hybridinfer/`` (created here on first use from PyPI, the same tritonclient version as the
project's), and runs ``tritongrpc_client.py``, which prints what it saw as JSON.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridinfer.models.catalog import find_model
from hybridinfer.models.onnxmodel import OnnxModel
from tests.conftest import REPO
from tests.peers import free_port, node_process, require

pytestmark = pytest.mark.integration
VENV = REPO / ".hybridinfer" / "tritonclient-grpc-venv"
CLIENT = Path(__file__).with_name("tritongrpc_client.py")


def tritonclient_python() -> Path:
    python = VENV / "bin" / "python"
    if (VENV / ".ready").exists():
        return python
    require("tritonclient")  # the project's own (http) install names the version to use
    version = importlib.metadata.version("tritonclient")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [str(VENV / "bin" / "pip"), "install", "--quiet", f"tritonclient[grpc]=={version}"],
            check=True,
            timeout=900,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"cannot install tritonclient[grpc]: {exc}")
    (VENV / ".ready").touch()
    return python


def run_client(target: str, *tls: Path) -> dict[str, object]:
    done = subprocess.run(
        [str(tritonclient_python()), str(CLIENT), target, *map(str, tls)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def check(answer: dict[str, object], models_dir: Path) -> None:
    assert answer["live"]
    assert answer["ready"]
    assert answer["model_ready"]
    assert not answer["nope_ready"]
    assert answer["server"]["name"] == "hybridinfer-node"  # type: ignore[index]
    assert answer["input"] == {"name": "text", "datatype": "BYTES", "shape": ["-1", "1"]}
    texts = np.array([["what a great day"], ["this is awful"]], dtype=np.object_)
    path, _ = find_model(models_dir, "sentiment-small")
    expected = OnnxModel(path).run({"text": texts})["probabilities"]
    np.testing.assert_allclose(answer["probabilities"], expected, rtol=1e-6)  # type: ignore[arg-type]
    assert answer["label"] == expected.argmax(axis=1).tolist()
    assert answer["id"] == "triton-1"
    assert answer["digits_shape"] == [1, 10]
    bad = answer["bad"]
    assert bad["status"] == "StatusCode.INVALID_ARGUMENT"  # type: ignore[index]
    assert "shape [1, 63] does not match" in bad["message"]  # type: ignore[index]
    assert answer["still_ready"]


def _args(models_dir: Path, cache: Path, grpc_port: int) -> list[str]:
    return [
        "--models", "sentiment-small,digits-small", "--models-dir", str(models_dir),
        "--cache-dir", str(cache), "--grpc-port", str(grpc_port),
    ]  # fmt: skip


def test_tritonclient_grpc_plain(models_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    with node_process(*_args(models_dir, tmp_path, port)):
        check(run_client(f"127.0.0.1:{port}"), models_dir)


@pytest.mark.parametrize("mutual", [False, True])
def test_tritonclient_grpc_over_tls(models_dir: Path, tmp_path: Path, mutual: bool) -> None:
    trustme = require("trustme")
    ca = trustme.CA()
    files = {name: tmp_path / name for name in ("ca.pem", "node.pem", "node.key", "c.pem", "c.key")}
    ca.cert_pem.write_to_path(str(files["ca.pem"]))
    node, caller = ca.issue_cert("127.0.0.1", "localhost"), ca.issue_cert("gateway.test")
    node.cert_chain_pems[0].write_to_path(str(files["node.pem"]))
    node.private_key_pem.write_to_path(str(files["node.key"]))
    caller.cert_chain_pems[0].write_to_path(str(files["c.pem"]))
    caller.private_key_pem.write_to_path(str(files["c.key"]))
    env = {
        "HYBRIDINFER_NODE_TLS_CERT_FILE": str(files["node.pem"]),
        "HYBRIDINFER_NODE_TLS_KEY_FILE": str(files["node.key"]),
        "HYBRIDINFER_NODE_TLS_CA_FILE": str(files["ca.pem"]),
        "HYBRIDINFER_NODE_TLS_REQUIRE_CLIENT_CERT": "true" if mutual else "false",
    }
    import ssl

    context = ssl.create_default_context(cafile=str(files["ca.pem"]))
    context.load_cert_chain(str(files["c.pem"]), str(files["c.key"]))
    port = free_port()
    with node_process(*_args(models_dir, tmp_path / "cache", port), env=env, context=context):
        tls = [files["ca.pem"], files["c.pem"], files["c.key"]] if mutual else [files["ca.pem"]]
        check(run_client(f"127.0.0.1:{port}", *tls), models_dir)
