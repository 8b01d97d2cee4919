"""The router reads the prompt, on a real `hybridinfer up` with its real LLM servers: hard chats
(multi-step maths, proofs, algorithms, system design) go to the cloud tier with
``model: "auto"``, easy ones (greetings, thanks, short facts) stay local, and each trace shows
the difficulty and the threshold it was held against.

The prompts come from two sets written for evaluation before the difficulty head's scores on
them were looked at, neither part of its training data (``routertraining/prompts``):
``tests/llm/prompts/difficulty-heldout.yaml`` and ``bench/prompts/difficulty.yaml``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import yaml

from hybridinfer.routertraining.difficultyhead import default_prompts_path, load_labelled
from tests.conftest import REPO
from tests.e2e.conftest import Running

pytestmark = pytest.mark.integration

SETS = {
    "heldout": REPO / "tests" / "llm" / "prompts" / "difficulty-heldout.yaml",
    "bench": REPO / "bench" / "prompts" / "difficulty.yaml",
}
SHARE = 0.9
"""Of each set's hard prompts at least this share reach the cloud; of its easy ones at least
this share stay local."""


def prompt_sets() -> dict[str, dict[str, list[str]]]:
    return {name: yaml.safe_load(path.read_text(encoding="utf-8")) for name, path in SETS.items()}


def test_the_sets_are_large_enough_and_not_training_data() -> None:
    training = set(load_labelled(default_prompts_path()).prompts)
    normalised = {" ".join(p.lower().split()) for p in training}
    for name, sets in prompt_sets().items():
        for kind in ("easy", "hard"):
            assert len(sets[kind]) >= 30, (name, kind)
            overlap = [p for p in sets[kind] if " ".join(p.lower().split()) in normalised]
            assert not overlap, f"{name}/{kind} holds training prompts: {overlap}"


def placed(client: httpx.Client, text: str) -> tuple[str, dict[str, Any] | None]:
    """The tier the router chose for a chat and its decision's difficulty entry (from the
    trace; None when scoring passed its time bound on a loaded host — the decision then says
    so, and counts as misplaced). The answer comes from that tier, or — when the privacy gate
    found a name (a mathematician's, say) and refused the public zone — from the private
    tier, as it must."""
    body = {"model": "auto", "messages": [{"role": "user", "content": text}], "max_tokens": 4}
    response = client.post("/v1/chat/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    trace = client.get(f"/v1/traces/{response.headers['X-Request-ID']}").json()
    (decision,) = trace["decisions"]  # a chat is one subtask
    difficulty = decision["difficulty"]
    if difficulty is None:
        assert decision["router_note"] == "difficulty not read (TimeoutError): decided without it"
        return "unscored", None
    assert f"Difficulty {difficulty['difficulty']:.2f}" in decision["reason"]
    assert 0.0 <= difficulty["difficulty"] <= 1.0
    assert difficulty["threshold"] == pytest.approx(0.5)
    assert difficulty["knob"] == "max quality drop 50%"
    assert difficulty["action"] == ("cloud" if decision["tier"] == "cloud" else "local")
    served = response.headers["X-Hybridinfer-Tier"]
    if served != decision["tier"]:
        refusals = [a["error_code"] for a in trace["attempts"] if a["status"] == "error"]
        assert decision["tier"] == "cloud", json.dumps(trace)
        assert refusals == ["privacy_violation"], json.dumps(trace)
        assert served == "local", json.dumps(trace)
    return decision["tier"], difficulty


@pytest.mark.parametrize("name", list(SETS))
def test_hard_chats_go_to_the_cloud_and_easy_ones_stay_local(fresh_up: Running, name: str) -> None:
    sets = prompt_sets()[name]
    placements: dict[str, list[tuple[str, str, float | None]]] = {"easy": [], "hard": []}
    with fresh_up.client() as client:
        for kind in ("hard", "easy"):
            for text in sets[kind]:
                tier, difficulty = placed(client, text)
                score = None if difficulty is None else difficulty["difficulty"]
                placements[kind].append((text, tier, score))
    misplaced = [p for p in placements["hard"] if p[1] != "cloud"]
    misplaced += [p for p in placements["easy"] if p[1] != "local"]
    hard_cloud = sum(p[1] == "cloud" for p in placements["hard"])
    easy_local = sum(p[1] == "local" for p in placements["easy"])
    print(
        f"{name}: {hard_cloud}/{len(placements['hard'])} hard placed on the cloud, "
        f"{easy_local}/{len(placements['easy'])} easy kept local, "
        f"{sum(p[1] == 'unscored' for k in placements.values() for p in k)} not scored in time"
    )
    assert hard_cloud >= SHARE * len(placements["hard"]), misplaced
    assert easy_local >= SHARE * len(placements["easy"]), misplaced
