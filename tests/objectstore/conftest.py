"""Every object store implementation, for the one shared suite (house rule 7)."""

from tests.peers import object_store, s3_endpoint

__all__ = ["object_store", "s3_endpoint"]
