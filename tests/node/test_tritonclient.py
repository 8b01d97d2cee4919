"""Acceptance: NVIDIA's own client (tritonclient[http]) against a real node process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hybridinfer.models.catalog import find_model
from hybridinfer.models.onnxmodel import OnnxModel
from tests.peers import node_process, require

pytestmark = pytest.mark.integration


def test_tritonclient_infers_binary_and_json_reads_metadata_and_readiness(
    models_dir: Path, tmp_path: Path
) -> None:
    http = require("tritonclient.http")
    utils = require("tritonclient.utils")
    args = ["--models", "sentiment-small,digits-small", "--models-dir", str(models_dir)]
    with node_process(*args, "--cache-dir", str(tmp_path)) as url:
        client = http.InferenceServerClient(url.removeprefix("http://"))
        try:
            assert client.is_server_live()
            assert client.is_server_ready()
            assert client.is_model_ready("sentiment-small")
            assert not client.is_model_ready("nope")
            metadata = client.get_model_metadata("sentiment-small")
            assert metadata["inputs"][0] == {"name": "text", "datatype": "BYTES", "shape": [-1, 1]}
            assert "binary_tensor_data" in client.get_server_metadata()["extensions"]

            texts = np.array([["what a great day"], ["this is awful"]], dtype=np.object_)
            path, _ = find_model(models_dir, "sentiment-small")
            expected = OnnxModel(path).run({"text": texts})["probabilities"]
            for binary in (True, False):
                text = http.InferInput("text", [2, 1], "BYTES")
                text.set_data_from_numpy(texts, binary_data=binary)
                outputs = [
                    http.InferRequestedOutput("probabilities", binary_data=binary),
                    http.InferRequestedOutput("label", binary_data=binary),
                ]
                result = client.infer("sentiment-small", [text], outputs=outputs)
                np.testing.assert_allclose(result.as_numpy("probabilities"), expected, rtol=1e-5)
                assert result.as_numpy("label").tolist() == expected.argmax(axis=1).tolist()

            pixels = http.InferInput("pixels", [1, 64], "FP32")
            pixels.set_data_from_numpy(np.zeros((1, 64), dtype=np.float32))  # binary by default
            result = client.infer("digits-small", [pixels])
            assert result.as_numpy("probabilities").shape == (1, 10)

            wrong = http.InferInput("pixels", [1, 63], "FP32")
            wrong.set_data_from_numpy(np.zeros((1, 63), dtype=np.float32))
            with pytest.raises(utils.InferenceServerException, match="shape"):
                client.infer("digits-small", [wrong])
            with pytest.raises(utils.InferenceServerException, match="unknown model"):
                client.infer("nope", [pixels])
            assert client.is_model_ready("digits-small")  # still serving
        finally:
            client.close()
