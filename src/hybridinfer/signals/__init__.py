"""The live readings routing decides on and execution writes: the node registry, circuit
breakers, latency windows, EWMA signals, spend budgets and their ledgers."""
