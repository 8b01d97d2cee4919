"""Node tests pull model versions from every object store implementation."""

from tests.peers import object_store, s3_endpoint

__all__ = ["object_store", "s3_endpoint"]
