"use strict";
// Changing without fear: the guarded policy walks of GET /v1/rollouts (polled with the rest of
// the dashboard) and a what-if replay report, logged against predicted, from
// POST /v1/policies/{version}/replay. Both hold counts and figures only, never a prompt.

const GUARD_FIGURES = [
  ["requests", "requests", 0],
  ["error_rate", "error rate", 4],
  ["p99_ms", "p99 ms", 1],
  ["cloud_share", "cloud share", 4],
  ["spend_per_request", "spend / request", 8],
];

function figureCells(figures) {
  return GUARD_FIGURES.map(([name, , digits]) => htmlEl("td", { "data-figure": name, text: fmt((figures || {})[name], digits) }));
}

function walkSteps(walk) {
  const steps = (walk.state && walk.state.steps) || [];
  const head = ["step", "share", "side", ...GUARD_FIGURES.map(([, label]) => label)];
  const rows = [];
  for (const s of steps) {
    const percent = `${fmt(walk.settings.steps[s.step], 0)} %`;
    for (const side of ["canary", "baseline"]) {
      rows.push(htmlEl("tr", { "data-step": String(s.step), "data-side": side }, [
        htmlEl("td", { text: side === "canary" ? String(s.step) : "" }),
        htmlEl("td", { text: side === "canary" ? percent : "" }),
        htmlEl("td", { text: side }),
        ...figureCells(s[side]),
      ]));
    }
  }
  return htmlEl("table", { class: "walk-steps" }, [
    htmlEl("thead", {}, [htmlEl("tr", {}, head.map((t) => htmlEl("th", { text: t })))]),
    htmlEl("tbody", {}, rows),
  ]);
}

// One walk, a policy's or a model rollout's: where it is, each breached guard, each step judged.
function walkParts(walk) {
  const parts = [
    htmlEl("small", { class: "walk-at", text: ` · step ${walk.step + 1} of ${walk.settings.steps.length} at ${fmt(walk.percent, 0)} %` }),
  ];
  for (const breach of (walk.state && walk.state.breach) || []) {
    parts.push(htmlEl("p", { class: "breach error", "data-guard": breach.guard, text: `breached ${breach.sentence}` }));
  }
  parts.push(walkSteps(walk));
  return parts;
}

// GET /v1/rollouts' policy_walks: each walk, newest first, with the figures of every step judged.
function renderWalks(walks) {
  document.getElementById("walk-panel").hidden = walks.length === 0;
  const container = clear(document.getElementById("walks"));
  for (const walk of walks) {
    const children = [htmlEl("strong", { text: `${walk.version}: ${walk.status}` }), ...walkParts(walk)];
    container.append(htmlEl("div", { class: `walk walk-${walk.status}`, "data-walk": walk.version }, children));
  }
}

const REPLAY_FIGURES = [
  ["cloud_share", "cloud share", 4],
  ["spend", "spend", 6],
  ["quality", "quality", 4],
  ["latency_mean_ms", "latency mean ms", 1],
  ["latency_p99_ms", "latency p99 ms", 1],
];

function replayTable(name, c) {
  const rows = REPLAY_FIGURES.map(([figure, label, digits]) => htmlEl("tr", { "data-figure": figure }, [
    htmlEl("td", { text: label }),
    htmlEl("td", { class: "logged", text: fmt(c.logged[figure], digits) }),
    htmlEl("td", { class: "predicted", text: fmt(c.predicted[figure], digits) }),
  ]));
  const moves = Object.entries(c.moves).map(([move, n]) => `${move} ${n}`).join(", ") || "none";
  return htmlEl("div", { class: "replay-capability", "data-capability": name }, [
    htmlEl("h3", { text: name }),
    htmlEl("p", { class: "replay-changed", text: `${c.changed} of ${c.decisions} decisions changed (${moves}) · ${c.privacy_violations} privacy violations` }),
    htmlEl("table", {}, [
      htmlEl("thead", {}, [htmlEl("tr", {}, ["", "logged", "predicted"].map((t) => htmlEl("th", { text: t })))]),
      htmlEl("tbody", {}, rows),
    ]),
  ]);
}

function renderReplay(report) {
  const verdict = report.passed ? "passed" : "would break";
  const summary = `${report.version} on ${report.traces} traces: ${verdict} · ${report.privacy_violations} privacy violations`;
  const container = clear(document.getElementById("replay-report"));
  container.append(htmlEl("p", { class: report.passed ? "replay-summary status-ok" : "replay-summary status-error", text: summary }));
  for (const breach of report.breaches) {
    container.append(htmlEl("p", { class: "breach error", "data-guard": breach.guard, text: breach.sentence }));
  }
  const tables = htmlEl("div", { class: "replay-grid" }, [replayTable("overall", report.overall)]);
  for (const [name, c] of Object.entries(report.capabilities)) tables.append(replayTable(name, c));
  container.append(tables);
}

async function replay(event) {
  event.preventDefault();
  const version = document.getElementById("replay-version").value.trim();
  const traces = Number(document.getElementById("replay-traces").value);
  const error = document.getElementById("replay-error");
  error.textContent = "";
  try {
    const response = await fetch(`/v1/policies/${encodeURIComponent(version)}/replay`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key()}`, "Content-Type": "application/json" },
      body: JSON.stringify({ traces }),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${response.status}`);
    renderReplay(body);
  } catch (failure) {
    clear(document.getElementById("replay-report"));
    error.textContent = String(failure.message || failure);
  }
}

document.getElementById("replay-form").addEventListener("submit", replay);
