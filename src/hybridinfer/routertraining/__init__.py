"""Training and evaluating the learned router offline (the CLI and benchmarks use it; the
request path only loads the artifact, ``route.learned``)."""
