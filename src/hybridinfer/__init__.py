"""hybridinfer: hybrid inference across the local host, edge nodes and cloud model services."""

__version__ = "0.1.0"
