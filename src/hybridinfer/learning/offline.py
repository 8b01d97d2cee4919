"""Offline evaluation of a learner on logged decisions: what it would have earned, read from
outcomes another policy chose, through the propensities that policy logged.

- IPS (inverse propensity scoring): mean of ``reward · [target's arm = logged arm] / p``;
  unbiased when every arm the target picks had ``p > 0`` under the logging policy.
- SNIPS: IPS normalised by the sum of its weights; biased, much lower variance.
- DR (doubly robust, Dudík et al. 2011): a reward model's prediction for the target's arm,
  plus the IPS correction of that model's error on the logged arm; unbiased if either the
  model or the propensities are right.

A logged row is ``(context, arm, propensity, reward)``; the target is a function of the
context and the arms that were allowed, returning its arm. Deterministic logging (propensity
1, a rule's choice) tells nothing about arms it never took: those rows only count where the
target agrees, which the ``support`` figure shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Target = Callable[[tuple[float, ...], Sequence[str]], str]
"""(context, allowed arms) → the arm the evaluated policy would choose."""
RewardModel = Callable[[tuple[float, ...], str], float]
"""(context, arm) → predicted reward (for DR)."""


@dataclass(frozen=True, slots=True)
class Logged:
    """One logged decision and the reward it earned."""

    context: tuple[float, ...]
    arm: str
    propensity: float
    reward: float
    candidates: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Estimate:
    """A policy's estimated mean reward on the log, three ways."""

    ips: float
    snips: float
    dr: float | None
    support: float
    """Share of rows where the target chose the logged arm."""
    rows: int


def evaluate(
    logged: Sequence[Logged], target: Target, model: RewardModel | None = None
) -> Estimate:
    """IPS, SNIPS and (with ``model``) DR estimates of ``target``'s mean reward."""
    if not logged:
        raise ValueError("no logged decisions to evaluate on")
    ips_sum = weight_sum = dr_sum = 0.0
    matches = 0
    for row in logged:
        if row.propensity <= 0.0:
            raise ValueError("a logged propensity must be positive")
        choice = target(row.context, row.candidates)
        weight = (1.0 / row.propensity) if choice == row.arm else 0.0
        matches += choice == row.arm
        ips_sum += weight * row.reward
        weight_sum += weight
        if model is not None:
            predicted = model(row.context, choice)
            dr_sum += predicted + weight * (row.reward - model(row.context, row.arm))
    rows = len(logged)
    return Estimate(
        ips=ips_sum / rows,
        snips=ips_sum / weight_sum if weight_sum > 0 else 0.0,
        dr=None if model is None else dr_sum / rows,
        support=matches / rows,
        rows=rows,
    )


def logged_from_records(
    records: Sequence[Mapping[str, Any]], weights: tuple[float, float, float]
) -> list[Logged]:
    """Rows of ``LearnerLog.records`` (or ``GET /v1/learners/{capability}?records``) as
    logged decisions, their reward weighed by ``(quality, latency, cost)``."""
    total = sum(weights) or 1.0
    out = []
    for record in records:
        parts = (record["quality"], record["latency"], record["cost"])
        reward = sum(w * float(v) for w, v in zip(weights, parts, strict=True)) / total
        out.append(
            Logged(
                context=tuple(record["context"]),
                arm=str(record["arm"]),
                propensity=float(record["propensity"]),
                reward=reward,
                candidates=tuple(record["candidates"]),
            )
        )
    return out
