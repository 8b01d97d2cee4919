"use strict";
// One request's trace: plan DAG, decisions with candidates and reasons, timing waterfall,
// attempts and errors. Reads the body of GET /v1/traces/{request_id}.

const STAGES = ["gateway", "decompose", "route", "execute", "aggregate"];

function renderTrace(trace) {
  document.getElementById("trace").hidden = false;
  document.getElementById("trace-id").textContent = trace.request_id;
  const timings = trace.timings_ms || {};
  document.getElementById("trace-summary").textContent =
    `task ${trace.task} · status ${trace.status} · total ${fmt(timings.total)} ms` +
    (trace.policy_version ? ` · policy ${trace.policy_version}` : "") +
    (trace.trace_id ? ` · trace ${trace.trace_id}` : "");
  drawPlan(document.getElementById("plan"), trace);
  const pseudonymised = (trace.plan && trace.plan.privacy && trace.plan.privacy.pseudonymised) || {};
  renderDecisions(document.getElementById("decisions"), trace.decisions || [], pseudonymised);
  drawWaterfall(document.getElementById("waterfall"), trace);
  renderAttempts(document.querySelector("#attempts tbody"), trace.attempts || []);
  const error = trace.error;
  document.getElementById("trace-error").textContent = error ? `error ${error.code}: ${error.message}` : "";
}

// Subtasks in columns by dependency depth, arrows from each dependency.
function drawPlan(svg, trace) {
  clear(svg);
  const subtasks = (trace.plan && trace.plan.subtasks) || [];
  const results = Object.fromEntries(((trace.plan && trace.plan.results) || []).map((r) => [r.id, r]));
  const depth = {};
  for (const s of subtasks) depth[s.id] = Math.max(0, ...s.depends_on.map((d) => (depth[d] ?? 0) + 1));
  const columns = {};
  for (const s of subtasks) (columns[depth[s.id]] = columns[depth[s.id]] || []).push(s);
  const boxW = 170, boxH = 46, gapX = 50, gapY = 14;
  const position = {};
  let rows = 1;
  for (const [column, items] of Object.entries(columns)) {
    rows = Math.max(rows, items.length);
    items.forEach((s, row) => { position[s.id] = { x: 4 + column * (boxW + gapX), y: 4 + row * (boxH + gapY) }; });
  }
  const width = 8 + Object.keys(columns).length * (boxW + gapX);
  const height = 8 + rows * (boxH + gapY);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const defs = svgEl("defs");
  const marker = svgEl("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" });
  marker.append(svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: "#868e96" }));
  defs.append(marker);
  svg.append(defs);
  for (const s of subtasks) {
    for (const dependency of s.depends_on) {
      const a = position[dependency], b = position[s.id];
      svg.append(svgEl("path", { class: "dag-edge", d: `M${a.x + boxW},${a.y + boxH / 2} C${a.x + boxW + gapX / 2},${a.y + boxH / 2} ${b.x - gapX / 2},${b.y + boxH / 2} ${b.x},${b.y + boxH / 2}` }));
    }
  }
  for (const s of subtasks) {
    const { x, y } = position[s.id];
    const result = results[s.id] || {};
    const group = svgEl("g", { class: "dag-node", "data-subtask": s.id });
    group.append(svgEl("rect", { x, y, width: boxW, height: boxH, class: `status-${result.status || "none"}` }));
    group.append(svgEl("text", { x: x + 6, y: y + 15 }, `${s.id}: ${s.capability}`));
    group.append(svgEl("text", { x: x + 6, y: y + 29 }, `${s.privacy}${s.soft ? " · soft" : ""}`));
    group.append(svgEl("text", { x: x + 6, y: y + 42, class: `tier-text-${result.tier || "none"}` }, `→ ${result.tier || "—"} ${result.status || ""}`));
    svg.append(group);
  }
}

function renderDecisions(container, decisions, pseudonymised = {}) {
  clear(container);
  if (!decisions.length) container.append(htmlEl("p", { text: "no decision (the request stopped before routing)" }));
  for (const decision of decisions) {
    const rows = decision.candidates.map((c) => htmlEl("tr", { class: c.deployment === decision.chosen ? "chosen" : c.rejected_by ? "rejected" : "" }, [
      htmlEl("td", { text: c.deployment }),
      htmlEl("td", { text: `${c.tier}/${c.zone}` }),
      htmlEl("td", { text: c.score === null ? "–" : fmt(c.score, 3) }),
      htmlEl("td", { text: fmt(c.expected_latency_ms) }),
      htmlEl("td", { text: c.quality === null || c.quality === undefined ? "–" : c.expected_quality === null || c.expected_quality === undefined ? fmt(c.quality, 3) : `${fmt(c.expected_quality, 3)} (${fmt(c.quality, 3)} on hard prompts)` }),
      htmlEl("td", { text: c.rejected_by ? `rejected: ${c.rejected_by}` : c.deployment === decision.chosen ? "chosen" : "fallback" }),
      htmlEl("td", { text: c.detail || "" }),
    ]));
    const table = htmlEl("table", {}, [
      htmlEl("thead", {}, [htmlEl("tr", {}, ["deployment", "tier/zone", "score", "exp. ms", "quality", "outcome", "detail"].map((h) => htmlEl("th", { text: h })))]),
      htmlEl("tbody", {}, rows),
    ]);
    container.append(htmlEl("div", { class: "decision", "data-subtask": decision.subtask }, [
      htmlEl("strong", { text: `${decision.subtask} → ${decision.chosen} (${decision.tier})` }),
      htmlEl("p", { class: "reason", text: decision.reason }),
      difficultyLine(decision),
      pseudonymLine(pseudonymised[decision.subtask]),
      htmlEl("small", { text: `policy ${decision.policy_version}` + (decision.rules.length ? ` · rules ${decision.rules.join(", ")}` : "") + (decision.fallbacks.length ? ` · fallbacks ${decision.fallbacks.join(", ")}` : "") }),
      table,
    ]));
  }
}

// What pseudonymisation replaced for the subtask (kinds and counts; the trace holds no value).
function pseudonymLine(outcome) {
  if (!outcome) return htmlEl("p", { class: "pseudonyms", text: "" });
  const kinds = Object.entries(outcome.kinds || {}).map(([kind, n]) => `${kind} x${n}`).join(", ") || "nothing found";
  const restore = outcome.failed ? `failed (${outcome.failed})` : outcome.restore;
  return htmlEl("p", { class: "pseudonyms", text: `pseudonymised: ${kinds} · ${outcome.restored ?? 0} restored · ${outcome.unissued ?? 0} never issued · restore ${restore}` });
}

// The prompt's difficulty against the knob's threshold, or why it was not read.
function difficultyLine(decision) {
  const d = decision.difficulty;
  if (!d) return htmlEl("p", { class: "difficulty", text: decision.router_note ? `difficulty: ${decision.router_note}` : "" });
  const signals = Object.entries(d.signals || {}).map(([k, v]) => `${k} ${fmt(v, 3)}`).join(", ");
  const sign = d.action === "cloud" ? "≥" : "<";
  return htmlEl("p", { class: "difficulty", text: `difficulty ${fmt(d.difficulty, 3)} ${sign} ${fmt(d.threshold, 3)} (${d.knob}, ${d.calibration}) → ${d.action}` + (signals ? ` · signals: ${signals}` : "") });
}

// Stages at their offsets, attempts under execute at theirs.
function drawWaterfall(svg, trace) {
  clear(svg);
  const timings = trace.timings_ms || {}, offsets = trace.offsets_ms || {};
  const total = Math.max(timings.total || 0, 0.001);
  const rows = [{ label: "total", start: 0, ms: timings.total || 0, kind: "stage", stage: "total" }];
  for (const stage of STAGES) {
    const start = stage === "gateway" ? 0 : offsets[stage];
    if (start === undefined && stage !== "gateway") continue;
    const label = stage === "gateway" ? "gateway (own time)" : stage;
    rows.push({ label, start, ms: timings[stage] || 0, kind: "stage", stage });
    if (stage === "execute") {
      for (const a of trace.attempts || []) {
        rows.push({ label: `  ${a.subtask} ${a.role} ${a.node}`, start: a.started_ms ?? start, ms: a.latency_ms, kind: a.status === "error" ? "attempt failed" : "attempt" });
      }
    }
  }
  const labelW = 190, width = 800, rowH = 18, chartW = width - labelW - 95;
  svg.setAttribute("viewBox", `0 0 ${width} ${rows.length * rowH + 4}`);
  svg.setAttribute("height", rows.length * rowH + 4);
  rows.forEach((row, index) => {
    const y = index * rowH + 2;
    const group = svgEl("g", { class: "wf", "data-stage": row.stage || "" });
    group.append(svgEl("text", { x: 0, y: y + 12 }, row.label));
    const x = labelW + (row.start / total) * chartW;
    group.append(svgEl("rect", { x, y: y + 2, width: Math.max(1, (row.ms / total) * chartW), height: rowH - 5, class: `bar ${row.kind}` }));
    group.append(svgEl("text", { x: Math.min(x + Math.max(1, (row.ms / total) * chartW) + 4, width - 90), y: y + 12, class: "ms" }, `${fmt(row.ms, 3)} ms`));
    svg.append(group);
  });
}

function renderAttempts(tbody, attempts) {
  clear(tbody);
  for (const a of attempts) {
    tbody.append(htmlEl("tr", {}, [
      htmlEl("td", { text: a.subtask }),
      htmlEl("td", { text: a.role }),
      htmlEl("td", { text: String(a.number ?? 1) }),
      htmlEl("td", { text: `${a.tier} / ${a.node} / ${a.model}` }),
      htmlEl("td", { class: `status-${a.status}`, text: a.status }),
      htmlEl("td", { text: fmt(a.started_ms, 3) }),
      htmlEl("td", { text: fmt(a.latency_ms, 3) }),
      htmlEl("td", { class: "error", text: a.error_code ? `${a.error_code}: ${a.error}` : "" }),
    ]));
  }
}
