// SVG charts drawn with createElementNS; labels are text nodes (stored names are text,
// shown as dom.js shows it).
import { shown } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = shown(text);
  return node;
}

/** Vertical bars: entries is [[label, value], ...] in display order. */
export function columnChart(entries, { height = 180, label = "activity per day" } = {}) {
  const width = Math.max(entries.length * 22 + 40, 320);
  const top = Math.max(1, ...entries.map(([, v]) => v));
  const plot = height - 34;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label });
  root.append(svg("line", { x1: 30, y1: plot + 4, x2: width - 6, y2: plot + 4, class: "axis" }));
  root.append(svg("text", { x: 2, y: 12 }, top));
  entries.forEach(([label, value], i) => {
    const h = Math.round((value / top) * (plot - 14));
    const x = 34 + i * 22;
    const bar = svg("rect", { x, y: plot + 4 - h, width: 16, height: Math.max(h, value ? 2 : 0), rx: 3, class: "bar" });
    bar.append(svg("title", {}, `${label}: ${value}`));
    root.append(bar);
    if (i % Math.ceil(entries.length / 10) === 0) {
      root.append(svg("text", { x: x - 4, y: height - 6 }, label.slice(5)));
    }
  });
  return root;
}

/** Horizontal bars for a {name: count} map, largest first, at most `max` rows. */
export function barChart(counts, { max = 10 } = {}) {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]).slice(0, max);
  const rowH = 24;
  const width = 420;
  const labelW = 130;
  const top = Math.max(1, ...entries.map(([, v]) => v));
  const root = svg("svg", { viewBox: `0 0 ${width} ${Math.max(entries.length, 1) * rowH + 6}`, role: "img" });
  if (!entries.length) root.append(svg("text", { x: 4, y: 16 }, "no data"));
  entries.forEach(([label, value], i) => {
    const y = i * rowH + 4;
    const w = Math.max(2, Math.round(((width - labelW - 50) * value) / top));
    const name = label.length > 20 ? `${label.slice(0, 19)}…` : label;
    root.append(svg("text", { x: 0, y: y + 14 }, name));
    const bar = svg("rect", { x: labelW, y, width: w, height: rowH - 8, rx: 3, class: "bar" });
    bar.append(svg("title", {}, `${label}: ${value}`));
    root.append(bar);
    root.append(svg("text", { x: labelW + w + 6, y: y + 13, class: "value" }, value));
  });
  return root;
}

/** Token meter: a bar per injection ([[label, tokens], ...] in time order) and the
 *  running total as a line, each on its own scale (left: per injection, right: total). */
export function meterChart(entries, { height = 150 } = {}) {
  const width = Math.max(entries.length * 26 + 80, 420);
  const plot = height - 30;
  const top = Math.max(1, ...entries.map(([, v]) => v));
  const total = Math.max(1, entries.reduce((sum, [, v]) => sum + v, 0));
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "injected tokens per injection and in total" });
  root.append(svg("line", { x1: 40, y1: plot + 4, x2: width - 40, y2: plot + 4, class: "axis" }));
  root.append(svg("text", { x: 2, y: 12 }, top));
  root.append(svg("text", { x: width - 38, y: 12, class: "total" }, `Σ ${total}`));
  let running = 0;
  const points = [];
  entries.forEach(([label, value], i) => {
    const x = 44 + i * 26;
    const h = Math.round((value / top) * (plot - 14));
    const bar = svg("rect", { x, y: plot + 4 - h, width: 18, height: Math.max(h, value ? 2 : 0), rx: 3, class: "bar" });
    bar.append(svg("title", {}, `${label}: ${value} tokens`));
    root.append(bar);
    running += value;
    points.push(`${x + 9},${plot + 4 - Math.round((running / total) * (plot - 14))}`);
  });
  root.append(svg("polyline", { points: points.join(" "), class: "cumulative" }));
  root.append(svg("text", { x: 44, y: height - 6 }, `${entries.length} injections · bars: tokens each · line: running total`));
  return root;
}
