"""Models on disk and in memory: the catalog of built models, published versions with
checksums, ONNX sessions and their cache, the MiniLM embedder, micro-batching."""
