"""Run by ``test_tritonclient_grpc.py`` in tritonclient's own venv (its protobuf pin clashes
with ours), so it imports nothing of hybridinfer: NVIDIA's gRPC client against a node, the
answers printed as one JSON object.

    python tritongrpc_client.py TARGET [CA_FILE [CERT_FILE KEY_FILE]]
"""

from __future__ import annotations

import json
import sys

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException


def main(target: str, ca: str | None, cert: str | None, key: str | None) -> dict[str, object]:
    client = grpcclient.InferenceServerClient(
        target,
        ssl=ca is not None,
        root_certificates=ca,
        certificate_chain=cert,
        private_key=key,
    )
    texts = np.array([["what a great day"], ["this is awful"]], dtype=np.object_)
    text = grpcclient.InferInput("text", [2, 1], "BYTES")
    text.set_data_from_numpy(texts)
    outputs = [grpcclient.InferRequestedOutput(n) for n in ("probabilities", "label")]
    result = client.infer("sentiment-small", [text], outputs=outputs, request_id="triton-1")
    pixels = grpcclient.InferInput("pixels", [1, 64], "FP32")
    pixels.set_data_from_numpy(np.zeros((1, 64), dtype=np.float32))
    digits = client.infer("digits-small", [pixels])
    wrong = grpcclient.InferInput("pixels", [1, 63], "FP32")
    wrong.set_data_from_numpy(np.zeros((1, 63), dtype=np.float32))
    try:
        client.infer("digits-small", [wrong])
        bad: dict[str, str | None] = {"status": None, "message": None}
    except InferenceServerException as exc:
        bad = {"status": exc.status(), "message": exc.message()}
    metadata = client.get_model_metadata("sentiment-small", as_json=True)
    answer = {
        "live": client.is_server_live(),
        "ready": client.is_server_ready(),
        "model_ready": client.is_model_ready("sentiment-small"),
        "nope_ready": client.is_model_ready("nope"),
        "server": client.get_server_metadata(as_json=True),
        "input": metadata["inputs"][0],
        "probabilities": result.as_numpy("probabilities").tolist(),
        "label": result.as_numpy("label").tolist(),
        "id": result.get_response().id,
        "digits_shape": list(digits.as_numpy("probabilities").shape),
        "bad": bad,
        "still_ready": client.is_model_ready("digits-small"),
    }
    client.close()
    return answer


if __name__ == "__main__":
    arguments = [*sys.argv[1:], None, None, None]  # tritonclient reads the PEM files itself
    print(json.dumps(main(arguments[0], arguments[1], arguments[2], arguments[3])))
