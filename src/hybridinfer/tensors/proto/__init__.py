"""Generated protobuf and gRPC stubs of the Open Inference Protocol (``grpc_predict_v2.proto``);
README.md says how they were made. Not edited by hand, so ruff and mypy skip them."""
