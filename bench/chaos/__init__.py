"""Chaos harness: nodes in their own network namespaces, joined to the host by veth pairs whose
links can be slowed, made lossy or cut (``network.py``), real hybridinfer processes on them
(``cluster.py``), bounded load and one result row per scenario (``load.py``)."""
