"use strict";
// The live dashboard: polls /v1/stats, /v1/nodes and /v1/traces with the admin key kept in
// this tab's sessionStorage; a click on a recent request opens its trace.

const KEY_ITEM = "hybridinfer.key";
const POLL_MS = 2000;
let selected = null;

function key() {
  return sessionStorage.getItem(KEY_ITEM);
}

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

async function api(path) {
  const response = await fetch(path, { headers: { Authorization: `Bearer ${key()}` } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${response.status}`);
  return body;
}

function renderStats(stats) {
  const total = stats.latency_ms.total;
  document.getElementById("rate").textContent = fmt(stats.per_second);
  document.getElementById("requests").textContent = `${stats.requests} requests in ${stats.window_s / 60} min`;
  document.getElementById("cloud-share").textContent = `${fmt(stats.cloud_share * 100, 1)} %`;
  document.getElementById("latency").textContent = `${fmt(total.p50, 1)} / ${fmt(total.p99, 1)}`;
  document.getElementById("latency-of").textContent = `total, ms, last ${stats.latency_of_last} requests`;
  document.getElementById("spend").textContent = fmt(stats.spend.spent, 4);
  document.getElementById("budget").textContent = stats.spend.limit ? `of ${fmt(stats.spend.limit, 4)} this period` : "no budget limit";
  document.getElementById("errors").textContent = String(stats.status.error || 0);
  document.getElementById("window").textContent = `last ${stats.window_s / 60} min, ${stats.series.bucket_s} s bars`;
  drawTraffic(document.getElementById("traffic"), stats.series);
  renderAnswers(stats.answers);
  const tbody = clear(document.querySelector("#latency-table tbody"));
  for (const [stage, p] of Object.entries(stats.latency_ms)) {
    tbody.append(htmlEl("tr", {}, [htmlEl("td", { text: stage }), htmlEl("td", { text: fmt(p.p50, 3) }), htmlEl("td", { text: fmt(p.p90, 3) }), htmlEl("td", { text: fmt(p.p99, 3) })]));
  }
}

function renderAnswers(answers) {
  const capabilities = Object.entries((answers && answers.capabilities) || {});
  document.getElementById("answers-panel").hidden = capabilities.length === 0;
  const tbody = clear(document.querySelector("#answers tbody"));
  for (const [capability, c] of capabilities) {
    tbody.append(htmlEl("tr", { "data-capability": capability }, [
      htmlEl("td", { text: capability }),
      htmlEl("td", { text: String(c.lookups) }),
      htmlEl("td", { text: `${fmt(c.hit_ratio * 100, 1)} %` }),
      htmlEl("td", { text: String(c.hits) }),
      htmlEl("td", { text: String(c.semantic_hits) }),
      htmlEl("td", { text: String(c.errors) }),
      htmlEl("td", { text: fmt(c.saved_spend, 4) }),
    ]));
  }
}

function renderNodes(nodes) {
  const tbody = clear(document.querySelector("#nodes tbody"));
  for (const node of nodes) {
    const deployments = htmlEl("td");
    for (const d of node.deployments) {
      deployments.append(htmlEl("div", { class: `breaker-${d.breaker}`, text: `${d.model}@${d.version} (${d.breaker})` }));
    }
    tbody.append(htmlEl("tr", { "data-node": node.id }, [
      htmlEl("td", { text: node.id }),
      htmlEl("td", { text: node.tier }),
      htmlEl("td", { text: node.zone }),
      htmlEl("td", { class: node.status === "ready" ? "status-ok" : "node-down", text: node.status }),
      htmlEl("td", { text: fmt(node.load) }),
      htmlEl("td", { text: String(node.in_flight ?? 0) }),
      deployments,
    ]));
  }
}

function answeringTier(trace) {
  if (trace.plan && trace.plan.reused) return "reused";
  const attempt = (trace.attempts || []).find((a) => a.status === "ok");
  return attempt ? attempt.tier : "none";
}

function renderRecent(traces) {
  const tbody = clear(document.querySelector("#recent tbody"));
  for (const trace of traces) {
    const row = htmlEl("tr", { "data-id": trace.request_id, class: trace.request_id === selected ? "selected" : "" }, [
      htmlEl("td", { text: new Date(trace.created_at * 1000).toLocaleTimeString() }),
      htmlEl("td", {}, [htmlEl("code", { text: trace.request_id.slice(0, 12) })]),
      htmlEl("td", { text: trace.task || "" }),
      htmlEl("td", { class: `status-${trace.status}`, text: trace.status }),
      htmlEl("td", { text: answeringTier(trace) }),
      htmlEl("td", { text: fmt((trace.timings_ms || {}).total) }),
    ]);
    row.addEventListener("click", () => openTrace(trace.request_id));
    tbody.append(row);
  }
}

async function openTrace(requestId) {
  selected = requestId;
  for (const row of document.querySelectorAll("#recent tbody tr")) row.classList.toggle("selected", row.dataset.id === requestId);
  try {
    renderTrace(await api(`/v1/traces/${encodeURIComponent(requestId)}`));
  } catch (error) {
    setStatus(String(error.message || error));
  }
}

// GET /v1/rollouts: each model rollout of the active policy, both versions' figures, and a
// guarded rollout's walk as policy walks are shown.
function renderRollouts(rollouts) {
  document.getElementById("rollout-panel").hidden = rollouts.length === 0;
  const container = clear(document.getElementById("rollouts"));
  for (const r of rollouts) {
    const row = (name, version, f) => htmlEl("tr", {}, [
      htmlEl("td", { text: name }),
      htmlEl("td", { text: version }),
      htmlEl("td", { text: String(f.answers) }),
      htmlEl("td", { text: String(f.errors) }),
      htmlEl("td", { text: fmt(f.latency_p50_ms, 3) }),
      htmlEl("td", { text: fmt(f.latency_p95_ms, 3) }),
      htmlEl("td", { text: fmt(f.mean_confidence, 3) }),
    ]);
    const decided = r.decision ? ` · ${r.decision.status || r.status}` : "";
    container.append(htmlEl("div", { class: "rollout", "data-rollout": r.id }, [
      htmlEl("strong", { text: `${r.id}: ${r.task} on ${r.model} → version ${r.candidate} at ${r.percent} %` }),
      htmlEl("small", { text: ` status ${r.status}${decided}` }),
      htmlEl("table", {}, [
        htmlEl("thead", {}, [htmlEl("tr", {}, ["", "version", "answers", "errors", "p50 ms", "p95 ms", "mean confidence"].map((t) => htmlEl("th", { text: t })))]),
        htmlEl("tbody", {}, [row("current", "—", r.baseline), row("candidate", r.candidate, r.candidate_figures)]),
      ]),
      ...(r.walk ? [htmlEl("div", { class: `walk walk-${r.walk.status}`, "data-walk": r.id }, [
        htmlEl("strong", { text: `walk: ${r.walk.status}` }), ...walkParts(r.walk),
      ])] : []),
    ]));
  }
}

async function refresh() {
  if (!key()) {
    setStatus("enter an admin API key");
    return;
  }
  try {
    const [stats, nodes, recent, rollouts] = await Promise.all([
      api("/v1/stats"), api("/v1/nodes"), api("/v1/traces?limit=25"), api("/v1/rollouts"),
    ]);
    renderStats(stats);
    renderNodes(nodes.nodes);
    renderRecent(recent.traces);
    renderRollouts(rollouts.rollouts);
    renderWalks(rollouts.policy_walks);
    setStatus(`updated ${new Date().toLocaleTimeString()}`);
  } catch (error) {
    setStatus(String(error.message || error));
  }
}

document.getElementById("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("key");
  if (input.value.trim()) sessionStorage.setItem(KEY_ITEM, input.value.trim());
  input.value = "";
  refresh();
});
document.getElementById("forget").addEventListener("click", () => {
  sessionStorage.removeItem(KEY_ITEM);
  setStatus("key forgotten");
});
legend(document.getElementById("traffic-legend"));
refresh();
setInterval(refresh, POLL_MS);
