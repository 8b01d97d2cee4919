"""The /ui dashboard: its shell is public and self-contained, its data needs the admin key,
and a real browser (Debian's headless chromium) shows a request's decision reason and stage
timings after a click. Without chromium the browser test skips, except under CI."""

from __future__ import annotations

import os
import re
import shutil
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
    for name in ("dashboard.js", "trace.js", "svg.js", "style.css"):
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
    percent: 40
"""


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
