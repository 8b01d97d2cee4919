"""The control plane: the composition root, the services handlers call (nodes, policies,
keys, traces, jobs), node probing, replicas, policy versions and model rollouts, keys, rate
limits, the audit log and async jobs."""
