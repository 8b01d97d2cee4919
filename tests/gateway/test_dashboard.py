"""The /ui dashboard: its shell is public and self-contained, its data needs the admin key,
and a real browser (Debian's headless chromium) shows a request's decision reason and stage
timings after a click, and a rolled-back policy walk and a replay report with their figures.
Without chromium the browser tests skip, except under CI."""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from hybridinfer.models.catalog import deployment_info
from tests.conftest import ADMIN_KEY, NODE_TOKEN, REPO, auth
from tests.peers import gateway_process, require

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SENTIMENT = {"task": "sentiment", "inputs": {"text": "the battery lasts for days, love it"}}


def test_the_page_and_its_files_are_public_and_load_nothing_from_elsewhere(
    client: TestClient,
) -> None:
    page = client.get("/ui")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    sources = [s for s in re.findall(r'(?:src|href)="([^"]+)"', page.text) if s != "data:,"]
    assert sources
    for source in sources:
        assert source.startswith("/ui/static/"), source
        assert client.get(source).status_code == 200, source
    for name in ("dashboard.js", "change.js", "trace.js", "svg.js", "style.css"):
        body = client.get(f"/ui/static/{name}").text
        assert "http://" not in body.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in body
    assert client.get("/ui/static/nothing.js").status_code == 404


def test_stats_need_the_admin_key_and_summarise_recent_requests(client: TestClient) -> None:
    assert client.get("/v1/stats").status_code == 401
    for _ in range(3):
        assert client.post("/v1/infer", json=SENTIMENT, headers=auth()).status_code == 200
    stats = client.get("/v1/stats", headers=auth()).json()
    assert stats["requests"] == 3
    assert stats["tiers"]["local"] == 3
    assert stats["status"] == {"ok": 3}
    assert stats["latency_ms"]["total"]["p50"] > 0
    assert sum(stats["series"]["tiers"]["local"]) == 3
    assert stats["spend"]["spent"] == 0.0
    assert stats["telemetry"]["exporter"] == "off"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    webdriver = require("selenium.webdriver")
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        message = "Debian's chromium (and its chromedriver) is not installed"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,2100"):
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


ROLLOUT_POLICY = """\
version: rollout-ui
rollouts:
  - task: sentiment
    model: sentiment-small
    candidate: "2"
    guard: {steps: [40, 100], dwell_s: 3600, min_requests: 1000}
"""
"""A guarded rollout that walks at 40 % for the whole test (never enough requests to judge)."""


ROLLOUT_ID = "sentiment/sentiment-small:2"


def start_rollout(api: httpx.Client, node_url: str, card: dict[str, Any]) -> None:
    """Register the version-2 node and send 40 % of sentiment traffic to it."""
    deployment = deployment_info(card).model_dump(mode="json")
    node = {"id": "edge-v2", "tier": "edge", "zone": "private", "url": node_url}
    registered = api.post(
        "/v1/nodes", json={**node, "deployments": [deployment]}, headers=auth(NODE_TOKEN)
    )
    assert registered.status_code == 201, registered.text
    applied = api.post("/v1/policies", json={"policy": ROLLOUT_POLICY})
    assert applied.status_code == 201, applied.text


@pytest.mark.integration
def test_a_browser_opens_a_recent_request_and_sees_its_decision_and_timings(
    tmp_path: Path,
    models_dir: Path,
    browser: Any,
    version_2: tuple[str, dict[str, Any]],
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    data_dir = tmp_path / "gw"
    with (
        gateway_process(
            data_dir, models_dir, ADMIN_KEY, node_token=NODE_TOKEN, log_level="warning"
        ) as (url, _),
        httpx.Client(base_url=url, headers=auth(), timeout=30) as api,
    ):
        start_rollout(api, *version_2)
        served = [api.post("/v1/infer", json=SENTIMENT).json() for _ in range(12)]
        while len(served) < 40 and all(b["subtasks"][0]["node"] != "edge-v2" for b in served):
            served.append(api.post("/v1/infer", json=SENTIMENT).json())  # 40 %: rarely needed
        failed = api.post("/v1/infer", json={**SENTIMENT, "options": {"route": "cloud"}})
        assert failed.status_code == 503
        on_edge = [body for body in served if body["subtasks"][0]["node"] == "edge-v2"]
        assert on_edge, "the rollout sent nothing to version 2"
        chosen = on_edge[-1]["request_id"]
        trace = api.get(f"/v1/traces/{chosen}").json()
        wait = WebDriverWait(browser, 20)
        browser.get(f"{url}/ui")
        browser.find_element(By.ID, "key").send_keys(ADMIN_KEY)
        browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
        row = f'#recent tbody tr[data-id="{chosen}"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, row))
        requests = browser.find_element(By.ID, "requests").text
        assert requests.startswith(f"{len(served) + 1} requests"), requests
        nodes = browser.find_element(By.ID, "nodes").text
        assert "edge-v2" in nodes
        assert "local" in nodes
        rollout = browser.find_element(By.CSS_SELECTOR, "#rollouts .rollout").text
        assert "sentiment-small → version 2 at 40 %" in rollout
        walk = f'#rollouts .rollout .walk[data-walk="{ROLLOUT_ID}"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, walk))
        assert (
            "walk: walking · step 1 of 2 at 40 %"
            in browser.find_element(By.CSS_SELECTOR, walk).text
        )
        browser.find_element(By.CSS_SELECTOR, row).click()
        (decision,) = trace["decisions"]
        reason = f'#decisions .decision[data-subtask="{decision["subtask"]}"] .reason'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, reason))
        assert browser.find_element(By.CSS_SELECTOR, reason).text == decision["reason"]
        candidates = browser.find_element(By.CSS_SELECTOR, "#decisions table").text
        for candidate in decision["candidates"]:
            assert candidate["deployment"] in candidates
        assert "rejected: rollout" in candidates  # version 1 is on the other side of the split
        waterfall = browser.find_element(By.ID, "waterfall")
        for stage in ("decompose", "route", "execute", "aggregate"):
            bar = waterfall.find_element(By.CSS_SELECTOR, f'g[data-stage="{stage}"]')
            assert f"{trace['timings_ms'][stage]:.3f} ms" in bar.text, stage
        assert decision["subtask"] in browser.find_element(By.ID, "plan").text
        assert "edge-v2" in browser.find_element(By.ID, "attempts").text
        shot = tmp_path / "ui.png"
        assert browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        if os.environ.get("HYBRIDINFER_SAVE_UI_SCREENSHOT"):
            (REPO / "docs" / "img").mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, REPO / "docs" / "img" / "ui.png")


DENY_ALL = """\
version: deny-ui
rules:
  - {name: refuse-everything, when: "true", action: deny}
guard: {steps: [50, 100], dwell_s: 1, min_requests: 3}
"""
"""A canary refusing every request: its error rate breaks the guard in its first step."""


def walk_to_rollback(api: httpx.Client) -> dict[str, Any]:
    """Stage and walk the refusing canary under traffic until the walk is decided; the walk."""
    staged = api.post(
        "/v1/policies?stage=true", content=DENY_ALL, headers={"Content-Type": "application/yaml"}
    )
    assert staged.status_code == 201, staged.text
    assert api.post("/v1/policies/deny-ui/walk").status_code == 201
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for _ in range(6):  # a fresh routing key each: the canary gets its share
            api.post("/v1/infer", json=SENTIMENT, headers={"X-Routing-Key": uuid.uuid4().hex})
        walk: dict[str, Any] = api.get("/v1/policies/deny-ui/walk").json()
        if walk["status"] in ("rolled_back", "promoted"):
            return walk
    pytest.fail("the walk of deny-ui was not decided within 60 s")


def cell(element: Any, selector: str) -> str:
    from selenium.webdriver.common.by import By

    return str(element.find_element(By.CSS_SELECTOR, selector).text)


@pytest.mark.integration
def test_a_browser_shows_a_rolled_back_walk_and_a_replay_report_side_by_side(
    tmp_path: Path, models_dir: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with (
        gateway_process(
            tmp_path / "gw", models_dir, ADMIN_KEY, log_level="warning", walk_tick_s=0.2
        ) as (url, _),
        httpx.Client(base_url=url, headers=auth(), timeout=30) as api,
    ):
        walk = walk_to_rollback(api)
        assert walk["status"] == "rolled_back", walk["state"]
        (judged,) = walk["state"]["steps"]
        breach = next(b for b in walk["state"]["breach"] if b["guard"] == "error_rate")
        report = api.post("/v1/policies/deny-ui/replay", json={"traces": 30}).json()
        assert report["overall"]["decisions"] > 0, report
        wait = WebDriverWait(browser, 20)
        browser.get(f"{url}/ui")
        browser.find_element(By.ID, "key").send_keys(ADMIN_KEY)
        browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
        shown = '#walks .walk[data-walk="deny-ui"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, shown))
        panel = browser.find_element(By.CSS_SELECTOR, shown)
        assert panel.text.startswith("deny-ui: rolled_back · step 1 of 2 at 50 %"), panel.text
        assert cell(panel, '.breach[data-guard="error_rate"]') == f"breached {breach['sentence']}"
        for side in ("canary", "baseline"):
            row = panel.find_element(By.CSS_SELECTOR, f'tr[data-step="0"][data-side="{side}"]')
            figures = judged[side]
            assert cell(row, '[data-figure="requests"]') == f"{figures['requests']:.0f}"
            assert cell(row, '[data-figure="error_rate"]') == f"{figures['error_rate']:.4f}"
            assert cell(row, '[data-figure="cloud_share"]') == f"{figures['cloud_share']:.4f}"
            p99_shown = float(cell(row, '[data-figure="p99_ms"]'))
            assert p99_shown == pytest.approx(figures["p99_ms"], abs=0.051)
        assert judged["canary"]["error_rate"] == 1.0  # every canary request was refused

        browser.find_element(By.ID, "replay-version").send_keys("deny-ui")
        traces = browser.find_element(By.ID, "replay-traces")
        traces.clear()
        traces.send_keys("30")
        browser.find_element(By.CSS_SELECTOR, "#replay-form button[type=submit]").click()
        overall = '#replay-report .replay-capability[data-capability="overall"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, overall))
        summary = cell(browser, "#replay-report .replay-summary")
        verdict = "passed" if report["passed"] else "would break"
        assert summary == (
            f"deny-ui on {report['traces']} traces: {verdict} · "
            f"{report['privacy_violations']} privacy violations"
        )
        blocks = {"overall": report["overall"], **report["capabilities"]}
        for name, figures in blocks.items():
            block = browser.find_element(
                By.CSS_SELECTOR, f'.replay-capability[data-capability="{name}"]'
            )
            changed = cell(block, ".replay-changed")
            assert changed.startswith(f"{figures['changed']} of {figures['decisions']} decisions")
            assert changed.endswith(f"· {figures['privacy_violations']} privacy violations")
            for side in ("logged", "predicted"):
                share = cell(block, f'tr[data-figure="cloud_share"] .{side}')
                assert share == f"{figures[side]['cloud_share']:.4f}", (name, side)
        assert report["overall"]["changed"] == report["overall"]["decisions"]  # all refused now
        page = browser.find_element(By.TAG_NAME, "main").text
        assert "battery lasts" not in page  # figures only, never a prompt
