"""The traffic split of a model rollout (``rollouts:`` in the policy; ``rollout.py`` measures
and decides them).

Per request, the router keeps only the deployments of the rollout's model on the request's
side: the routing key hashed with the rollout's id, as policy canaries do, so a caller stays on
one version. The other versions are rejected by ``rollout``, unless no deployment of this side
survived the filters: a rollout never turns capacity into an error.
"""

from __future__ import annotations

from hybridinfer.core.decision import Candidate
from hybridinfer.policy.canary import on_canary_side
from hybridinfer.policy.document import ModelRollout


def keep_side(
    rollout: ModelRollout, percent: float, routing_key: str, survivors: list[Candidate]
) -> list[Candidate]:
    """The survivors minus the deployments of ``rollout.model`` on the other side."""
    own = [c for c in survivors if c.deployment.model == rollout.model]
    to_candidate = on_canary_side(routing_key, rollout.id, percent)
    keep = [c for c in own if (c.deployment.version == rollout.candidate) == to_candidate]
    if not keep or len(keep) == len(own):
        return survivors
    side = f"version {rollout.candidate}" if to_candidate else "the current version"
    for candidate in own:
        if candidate not in keep:
            candidate.rejected_by = "rollout"
            candidate.detail = (
                f"model rollout {rollout.id} at {percent:g} %: this request uses {side}"
            )
    return [c for c in survivors if c.rejected_by is None]
