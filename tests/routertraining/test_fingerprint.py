"""The training prompts' digests in a router's card: what `router eval` counts as in-sample."""

from __future__ import annotations

import json

import pytest

from hybridinfer.errors import InvalidInput
from hybridinfer.route.learned import bundled_router_path
from hybridinfer.routertraining.fingerprint import prompt_fingerprint, seen_in_training
from hybridinfer.routertraining.outcomes import load_outcomes_dir
from tests.routerdata import router_data


def test_a_training_prompt_is_seen_however_it_is_spaced_and_a_new_one_is_not() -> None:
    trained = [f"Question {n}: what is {n} squared?\nA. {n}\nB. {n * n}" for n in range(5000)]
    fingerprint = prompt_fingerprint([*trained, trained[0]])
    assert fingerprint["count"] == 5000  # a repeated prompt is one digest
    respaced = ["  " + prompt.replace("\n", " \n\t") + " " for prompt in trained[:100]]
    assert seen_in_training(fingerprint, respaced).all()
    new = [f"Question {n}: what is {n} cubed?" for n in range(20_000)]
    # 4-byte digests: a new prompt matches one of 5,000 with probability ~1e-6
    assert seen_in_training(fingerprint, new).sum() <= 1
    mixed = seen_in_training(fingerprint, [new[0], trained[7], new[1], trained[4999]])
    assert mixed.tolist() == [False, True, False, True]
    assert not seen_in_training(prompt_fingerprint([]), trained[:3]).any()


def test_an_unknown_fingerprint_is_refused() -> None:
    with pytest.raises(InvalidInput, match="unknown training-prompt fingerprint"):
        seen_in_training({"scheme": "md5", "digests": ""}, ["a"])


def test_the_bundled_router_keeps_the_digests_of_exactly_its_training_prompts() -> None:
    card = json.loads(bundled_router_path().read_text())["card"]
    prompts = load_outcomes_dir(router_data()).prompts
    assert card["training_data"]["rows"] == len(prompts)
    assert card["training_data"]["prompts"] == prompt_fingerprint(prompts)
