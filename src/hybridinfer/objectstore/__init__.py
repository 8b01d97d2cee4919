"""Object stores: large blobs and model artifacts (filesystem default, S3 API)."""
