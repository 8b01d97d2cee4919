"use strict";
// Small DOM and SVG builders shared by the dashboard and the trace view (no libraries).

const SVG_NS = "http://www.w3.org/2000/svg";
const TIERS = ["local", "edge", "cloud", "none"];

function svgEl(name, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

function htmlEl(name, attrs = {}, children = []) {
  const node = document.createElement(name);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

function fmt(value, digits = 2) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

// Requests per tier over time: one stacked bar per bucket.
function drawTraffic(svg, series) {
  clear(svg);
  const width = 600, height = 160, pad = 18;
  const count = series.tiers.local.length;
  const totals = Array.from({ length: count }, (_, i) => TIERS.reduce((sum, t) => sum + series.tiers[t][i], 0));
  const peak = Math.max(1, ...totals);
  const barWidth = (width - pad) / count;
  svg.append(svgEl("text", { x: 0, y: 10, class: "axis" }, String(peak)));
  svg.append(svgEl("line", { x1: pad, y1: height - pad, x2: width, y2: height - pad, class: "grid", stroke: "#ced4da" }));
  for (let i = 0; i < count; i++) {
    let y = height - pad;
    for (const tier of TIERS) {
      const value = series.tiers[tier][i];
      if (!value) continue;
      const h = (value / peak) * (height - 2 * pad);
      y -= h;
      const rect = svgEl("rect", { x: pad + i * barWidth + 1, y, width: Math.max(1, barWidth - 2), height: h, class: `tier-${tier}` });
      rect.append(svgEl("title", {}, `${tier}: ${value}`));
      svg.append(rect);
    }
  }
  svg.append(svgEl("text", { x: pad, y: height - 4 }, `-${series.bucket_s * count}s`));
  svg.append(svgEl("text", { x: width, y: height - 4, "text-anchor": "end" }, "now"));
}

function legend(container) {
  clear(container);
  for (const tier of TIERS) {
    container.append(htmlEl("span", {}, [htmlEl("i", { class: `tier-${tier}` }), tier]));
  }
}
