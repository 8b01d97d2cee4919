"""The vocabulary every layer shares: plans, decisions, topology, traces, request schemas,
and the two primitives of background work (a supervised task, a back-off)."""
