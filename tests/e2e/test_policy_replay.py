"""Acceptance: a what-if replay of a changed cascade target on logged traffic predicts the
cloud share that policy then measures live on the same prompts, within ±5 points — one real
`hybridinfer up` (local ONNX tier, a real cloud node process), real tweets; and the CLI gate
exits non-zero when the change would break a guard.

The prompts are tweets the execute-time privacy gate lets out of the private zone (a probe
with ``route: cloud`` answered): for a prompt the log never sent out, replay cannot know that
names in it would keep it private, and says so (``gate_unknown``) instead of guessing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from hybridinfer.cli import main
from hybridinfer.modelzoo.datasets import load_tweets
from hybridinfer.policy.document import default_policy_path
from tests.conftest import ADMIN_KEY
from tests.e2e.conftest import Running, start_patiently, stop

pytestmark = pytest.mark.integration

PROMPTS = 150


def changed_policy() -> str:
    """The default policy with a new version and the sentiment cascade target raised."""
    text = default_policy_path().read_text()
    text = text.replace("version: default-4", "version: replay-2")
    changed = text.replace(
        "sentiment: {target_cloud_share: 0.3}", "sentiment: {target_cloud_share: 0.6}"
    )
    assert changed != text
    return changed


def cloud_share(client: httpx.Client, prompts: list[str]) -> float:
    """Share of the prompts' text-classification subtasks a cloud deployment answered, live
    (privacy steps of prompts holding names, say, are not counted)."""
    tiers = []
    for text in prompts:
        response = client.post("/v1/infer", json={"task": "sentiment", "inputs": {"text": text}})
        assert response.status_code == 200, response.text
        subtasks = response.json()["subtasks"]
        tiers += [s["tier"] for s in subtasks if s["capability"] == "text-classification"]
    return tiers.count("cloud") / len(tiers)


def may_leave(client: httpx.Client, text: str) -> bool:
    """The gate lets this prompt out of the private zone (a cloud-only request answers)."""
    body = {"task": "sentiment", "inputs": {"text": text}, "options": {"route": "cloud"}}
    return client.post("/v1/infer", json=body).status_code == 200


@pytest.fixture
def up(tmp_path: Path, models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    # A hedge that wins the race leaves no local confidence in the log (replay then cannot
    # know whether the new target escalates) and moves the live share with the host's load.
    monkeypatch.setenv("HYBRIDINFER_HEDGE_LATENCY_SENSITIVE", "false")
    running = start_patiently(tmp_path / "data", models_dir)
    yield running
    stop(running)


def test_replay_predicts_the_live_cloud_share_of_a_changed_cascade_target(up: Running) -> None:
    running = up
    with running.client() as client:
        prompts = [text for text in map(str, load_tweets()[0][:400]) if may_leave(client, text)]
        prompts = prompts[:PROMPTS]
        assert len(prompts) == PROMPTS
        logged = cloud_share(client, prompts)
        staged = client.post(
            "/v1/policies?stage=true",
            content=changed_policy(),
            headers={"Content-Type": "application/yaml"},
        )
        assert staged.status_code == 201, staged.text
        report = client.post("/v1/policies/replay-2/replay", json={"traces": PROMPTS})
        assert report.status_code == 200, report.text
        body = report.json()
        entry = body["capabilities"]["text-classification"]
        assert body["traces"] == PROMPTS
        assert body["privacy_violations"] == 0
        assert entry["unknown_confidence"] == 0
        assert entry["logged"]["cloud_share"] == pytest.approx(logged, abs=0.005)
        predicted = entry["predicted"]["cloud_share"]
        assert predicted > logged + 0.1, (
            body
        )  # the change moves traffic, or the test proves nothing
        assert entry["moves"].get("local->cloud", 0) > 0
        assert body["snapshots_found"] >= 1

        gate = CliRunner().invoke(
            main,
            [
                "policy",
                "replay",
                "replay-2",
                "--traces",
                str(PROMPTS),
                "--url",
                running.url,
                "--key",
                ADMIN_KEY,
            ],
        )
        assert gate.exit_code == 1, gate.output  # more cloud than the guard allows
        assert "guard breached: cloud_share" in gate.output

        applied = client.post(
            "/v1/policies", content=changed_policy(), headers={"Content-Type": "application/yaml"}
        )
        assert applied.status_code == 201, applied.text
        measured = cloud_share(client, prompts)
    print(f"cloud share: logged {logged:.4f}, predicted {predicted:.4f}, measured {measured:.4f}")
    assert abs(predicted - measured) <= 0.05, (predicted, measured, logged)
