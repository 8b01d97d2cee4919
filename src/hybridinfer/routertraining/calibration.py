"""The reference distributions a router's live scores are read against.

A raw router score (the expected quality gain of the strong model) means little alone; its
rank among the scores of many prompts does. ``calibration`` stores, in the artifact's card,
101 quantiles of the learned score and of the prompt length (words) over the training prompts,
so serving maps a prompt to a difficulty in [0, 1] (the average of its two ranks) and a policy's
``target_cloud_share`` to a threshold, without the training data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hybridinfer.route.learned import FeatureTable, LearnedRouter

QUANTILES = np.linspace(0.0, 1.0, 101)


def calibration(router: LearnedRouter, table: FeatureTable, prompts: list[str]) -> dict[str, Any]:
    """The card entry: quantiles of the learned score and of the length in words."""
    scores = router.score_features(table)
    words = np.asarray([len(prompt.split()) for prompt in prompts], dtype=np.float64)
    return {
        "prompts": len(prompts),
        "learned": [round(float(q), 6) for q in np.quantile(scores, QUANTILES)],
        "words": [round(float(q), 3) for q in np.quantile(words, QUANTILES)],
    }
