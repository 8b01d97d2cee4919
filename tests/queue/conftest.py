"""Every work queue implementation, for the one shared suite: in-process and NATS JetStream."""

from tests.services import nats_url, queue

__all__ = ["nats_url", "queue"]
