"""A model node: an Open Inference Protocol (KServe V2) server that registers with the gateway."""
