"""Acceptance: our `v2` backend against a real MLServer serving a sklearn model the test trains,
over REST and over gRPC (MLServer's own gRPC port).

MLServer's pins clash with ours, so it lives in its own venv under ``.hybridinfer/`` (created
here on first use from PyPI: mlserver 1.7.1 + mlserver-sklearn, uvloop pinned to 0.21.0 because
MLServer 1.7.1 dies at start with uvloop >= 0.22, scikit-learn pinned to ours so the pickle
loads cleanly).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hybridinfer.backends.v2 import V2Backend
from hybridinfer.core.topology import Deployment, Node, TensorSpec, Tier, Zone
from hybridinfer.errors import UpstreamRejected
from tests.conftest import REPO
from tests.peers import free_port, require, wait_for

pytestmark = pytest.mark.integration
VENV = REPO / ".hybridinfer" / "mlserver-venv"
MODEL = "digits-sklearn"


def mlserver_venv() -> Path:
    executable = VENV / "bin" / "mlserver"
    if executable.exists():
        return executable
    sklearn = require("sklearn")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [
                str(VENV / "bin" / "pip"), "install", "--quiet", "mlserver==1.7.1",
                "mlserver-sklearn==1.7.1", "uvloop==0.21.0", f"scikit-learn=={sklearn.__version__}",
            ],
            check=True,
            timeout=900,
        )  # fmt: skip
    except (subprocess.SubprocessError, OSError) as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"cannot install MLServer: {exc}")
    return executable


@pytest.fixture(scope="module")
def mlserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, object, str]]:
    """MLServer serving a logistic regression on sklearn's digits; yields (url, model,
    grpc_url)."""
    joblib = require("joblib")
    datasets = require("sklearn.datasets")
    linear = require("sklearn.linear_model")
    executable = mlserver_venv()
    digits = datasets.load_digits()
    model = linear.LogisticRegression(max_iter=2000).fit(digits.data[:1500], digits.target[:1500])
    folder = tmp_path_factory.mktemp("mlserver")
    joblib.dump(model, folder / "model.joblib")
    (folder / "model-settings.json").write_text(
        json.dumps(
            {
                "name": MODEL,
                "implementation": "mlserver_sklearn.SKLearnModel",
                "parameters": {"uri": "./model.joblib", "version": "1"},
            }
        )
    )
    port, grpc_port = free_port(), free_port()
    settings = {
        "http_port": port,
        "grpc_port": grpc_port,
        "metrics_port": free_port(),
        "parallel_workers": 0,
    }
    (folder / "settings.json").write_text(json.dumps(settings))
    log = (folder / "mlserver.log").open("wb")
    process = subprocess.Popen(
        [str(executable), "start", str(folder)], cwd=folder, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{url}/v2/models/{MODEL}/ready", seconds=90)
        yield url, model, f"grpc://127.0.0.1:{grpc_port}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def deployment(model: str = MODEL) -> Deployment:
    return Deployment(
        node_id="mlserver",
        model=model,
        version="1",
        capability="image-classification",
        task="digits",
        quality=0.9,
        latency_ms=2.0,
        labels=[str(digit) for digit in range(10)],
        inputs=[TensorSpec("pixels", "FP64", [-1, 64])],
        outputs=[TensorSpec("predict_proba", "FP64", [-1, 10])],
    )


@pytest.mark.parametrize("transport", ["rest", "grpc"])
async def test_v2_backend_matches_sklearns_own_prediction(
    mlserver: tuple[str, object, str], transport: str
) -> None:
    url, model, grpc_url = mlserver
    datasets = require("sklearn.datasets")
    digits = datasets.load_digits()
    node = Node(
        id="mlserver",
        tier=Tier.CLOUD,
        zone=Zone.PUBLIC,
        url=url,
        protocol="v2",
        grpc_url=grpc_url if transport == "grpc" else None,
    )
    backend = V2Backend()
    try:
        assert await backend.probe(node, 5.0)  # gRPC: MLServer's ServerReady (no grpc.health)
        for row in digits.data[1500:1510]:
            answer = await backend.infer(node, deployment(), {"pixels": row.tolist()}, 10.0)
            expected = model.predict_proba(row.reshape(1, -1))[0]  # type: ignore[attr-defined]
            assert answer["label"] == str(int(np.argmax(expected)))
            scores = [answer["scores"][str(digit)] for digit in range(10)]
            np.testing.assert_allclose(scores, expected, atol=1e-6)
        with pytest.raises(UpstreamRejected):
            await backend.infer(node, deployment("nope"), {"pixels": [0.0] * 64}, 10.0)
    finally:
        await backend.aclose()
