// Small SVG charts: lines, scatter (with a highlighted set and a colour scale) and bars.
// Colours are the Okabe-Ito palette (readable with the common colour-vision deficiencies) and
// every series also differs by dash or marker, so nothing is told by colour alone.
import { num, si } from "./format.js";

export const PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];
// A stacked bar's parts (up to 14 in a training step) each need their own colour: Okabe-Ito's, then
// Paul Tol's muted scheme's that differ from them.
const STACK_PALETTE = [...PALETTE, "#882255", "#44AA99", "#999933", "#332288", "#DDDDDD", "#AA4499"];
const DASHES = ["", "6 3", "2 3", "8 3 2 3"];
const NS = "http://www.w3.org/2000/svg";
const H = 360, M = { left: 72, right: 16, top: 16, bottom: 52 };

// A chart is drawn at its box's width in CSS pixels (360-960; 640 while the box is not laid out), so
// its text shows at the size the stylesheet gives it (11 px and up) instead of shrinking with the box.
const chartWidth = (boxWidth) => Math.round(Math.min(Math.max(boxWidth || 640, 360), 960));
const drawn = new WeakMap();  // a chart's box -> its drawing's nodes and the observer of its width

// A chart function of (box, options): draws into the box now and again whenever the box's width
// changes (when it is first laid out, or the window is resized), replacing its previous drawing.
function responsive(draw) {
  return (container, options) => {
    const before = drawn.get(container);
    before?.observer.disconnect();
    let nodes = before?.nodes ?? [], width = null;
    const render = () => {
      const boxWidth = container.clientWidth;
      if (width !== null && (!boxWidth || Math.abs(boxWidth - width) < 2)) return;
      width = boxWidth;
      const fresh = draw(options, chartWidth(boxWidth)).filter(Boolean);
      if (nodes.length && nodes[0].parentNode === container) {
        nodes[0].replaceWith(...fresh);
        nodes.slice(1).forEach((node) => node.remove());
      } else container.append(...fresh);
      nodes = fresh;
      drawn.set(container, { nodes, observer });
    };
    const observer = new ResizeObserver(render);
    render();
    observer.observe(container);
  };
}

const svgEl = (tag, attrs = {}, text) => {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
};

function scale(values, log, pad = 0.04) {
  let finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (!finite.length) finite = [0, 1];
  let lo = Math.min(...finite), hi = Math.max(...finite);
  if (log) { lo = Math.log10(lo); hi = Math.log10(hi); }
  if (lo === hi) { lo -= 0.5; hi += 0.5; }
  const span = hi - lo;
  lo -= span * pad; hi += span * pad;
  const f = (v) => ((log ? Math.log10(v) : v) - lo) / (hi - lo);
  const ticks = [];
  if (log) {
    for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) ticks.push(10 ** e);
    if (ticks.length < 2) for (let e = Math.floor(lo); e <= Math.ceil(hi); e++) [2, 5].forEach((m) => { const t = m * 10 ** e; if (f(t) >= 0 && f(t) <= 1) ticks.push(t); });
  } else {
    const step = 10 ** Math.floor(Math.log10(span / 4));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 6) ?? step * 10;
    for (let t = Math.ceil(lo / nice) * nice; t <= hi; t += nice) ticks.push(Math.abs(t) < nice * 1e-9 ? 0 : t);
  }
  return { f, ticks: ticks.sort((a, b) => a - b) };
}

// The width a tick label takes at the charts' 11px font (a generous average glyph width), so that
// the y axis title sits clear of the widest tick and x ticks are thinned before they collide.
const textWidth = (text) => 6.6 * String(text).length;

// Tick labels with as few significant digits as keep them apart (117.0, 117.2 rather than 117, 117); from a
// million up with an SI prefix ("200 M", never "200,000,000").
function tickLabels(ticks) {
  const large = Math.max(0, ...ticks.map(Math.abs)) >= 1e6;
  let labels = [];
  for (let digits = 2; digits <= 8; digits++) {
    labels = ticks.map((t) => (large ? si(t, "", Math.max(digits, 3)) : num(t, digits)));
    if (new Set(labels).size === labels.length) break;
  }
  return labels;
}

function yAxis(parent, ticks, py, yLabel, W) {
  const labels = tickLabels(ticks);
  const left = Math.max(M.left, 30 + Math.max(0, ...labels.map(textWidth)));
  ticks.forEach((t, i) => {
    parent.append(svgEl("line", { x1: left, x2: W - M.right, y1: py(t), y2: py(t), class: "grid" }));
    parent.append(svgEl("text", { x: left - 6, y: py(t) + 4, "text-anchor": "end" }, labels[i]));
  });
  const middle = (M.top + H - M.bottom) / 2;
  parent.append(svgEl("text", { x: 14, y: middle, "text-anchor": "middle", class: "label", transform: `rotate(-90 14 ${middle})` }, yLabel));
  return left;
}

function frame(W, { title, xLabel, yLabel, xLog, yLog, xs, ys }) {
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "chart" });
  svg.append(svgEl("title", {}, title || `${yLabel} against ${xLabel}`));
  const x = scale(xs, xLog), y = scale(ys, yLog);
  const py = (v) => H - M.bottom - y.f(v) * (H - M.top - M.bottom);
  const axes = svgEl("g", { class: "axes" });
  const plot = svgEl("rect", { y: M.top, height: H - M.top - M.bottom, class: "plot" });
  axes.append(plot);
  const left = yAxis(axes, y.ticks, py, yLabel, W);
  plot.setAttribute("x", left);
  plot.setAttribute("width", W - left - M.right);
  const px = (v) => left + x.f(v) * (W - left - M.right);
  const labels = tickLabels(x.ticks);
  const spacing = (W - left - M.right) / Math.max(x.ticks.length, 1);
  const every = Math.ceil((Math.max(0, ...labels.map(textWidth)) + 8) / spacing);
  x.ticks.forEach((t, i) => {
    axes.append(svgEl("line", { x1: px(t), x2: px(t), y1: M.top, y2: H - M.bottom, class: "grid" }));
    if (i % every) return;
    // A tick label that would run past the drawing's right edge ends at its tick instead.
    const past = px(t) + textWidth(labels[i]) / 2 > W - 2;
    axes.append(svgEl("text", { x: px(t), y: H - M.bottom + 16, "text-anchor": past ? "end" : "middle" }, labels[i]));
  });
  axes.append(svgEl("text", { x: (left + W - M.right) / 2, y: H - 10, "text-anchor": "middle", class: "label" }, xLabel));
  svg.append(axes);
  return { svg, px, py, left };
}

function legend(items) {
  const list = document.createElement("ul");
  list.className = "legend";
  items.forEach(({ name, colour, dash, marker }) => {
    const item = document.createElement("li");
    const swatch = svgEl("svg", { width: 28, height: 12, "aria-hidden": "true" });
    swatch.append(svgEl("line", { x1: 0, x2: 28, y1: 6, y2: 6, stroke: colour, "stroke-width": 3, "stroke-dasharray": dash || "" }));
    if (marker) swatch.append(svgEl("circle", { cx: 14, cy: 6, r: 4, fill: colour }));
    item.append(swatch, ` ${name}`);
    list.append(item);
  });
  return list;
}

// series: [{name, x: [], y: []}]; markers: [{x, label}] drawn as labelled vertical lines; yFrom: values
// the y axis always spans (e.g. [0, 1] for a fraction), so two close points are not drawn far apart.
export const lineChart = responsive(({ series, xLabel, yLabel, xLog = false, yLog = false, markers = [], title, yFrom = [] }, W) => {
  const xs = series.flatMap((s) => s.x).concat(markers.map((m) => m.x));
  const ys = series.flatMap((s) => s.y).concat(yFrom);
  const { svg, px, py, left } = frame(W, { title, xLabel, yLabel, xLog, yLog, xs, ys });
  series.forEach((s, i) => {
    const colour = PALETTE[i % PALETTE.length];
    const points = s.x.map((xv, j) => [xv, s.y[j]]).filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b)
      && (!xLog || a > 0) && (!yLog || b > 0));
    const path = points.map(([a, b], j) => `${j ? "L" : "M"}${px(a).toFixed(1)},${py(b).toFixed(1)}`).join("");
    svg.append(svgEl("path", { d: path, fill: "none", stroke: colour, "stroke-width": 2.5, "stroke-dasharray": DASHES[i % DASHES.length] }));
    for (const [a, b] of points) {
      const dot = svgEl("circle", { cx: px(a), cy: py(b), r: 3, fill: colour });
      dot.append(svgEl("title", {}, `${s.name}: ${num(b)} at ${num(a)}`));
      svg.append(dot);
    }
  });
  markers.forEach((m, i) => {  // a label that would run past the plot's right edge is set to the line's left
    const x = px(m.x), before = x + 4 + textWidth(m.label) > W - M.right && x - 4 - textWidth(m.label) >= left;
    svg.append(svgEl("line", { x1: x, x2: x, y1: M.top, y2: H - M.bottom, class: "marker" }));
    svg.append(svgEl("text", { x: before ? x - 4 : x + 4, y: M.top + 14 + 14 * i, class: "marker-label",
      "text-anchor": before ? "end" : "start" }, m.label));
  });
  return [svg, legend(series.map((s, i) => ({ name: s.name, colour: PALETTE[i % PALETTE.length], dash: DASHES[i % DASHES.length], marker: true })))];
});

// points: [{x, y, c?, label, highlight?, rejected?, xBand?, yBand?}]; colour by c (a numeric or categorical value); a
// rejected point (failing a goal constraint) is drawn hollow grey; a point's bands ([low, high]) as error bars;
// limits: [{axis: "x" or "y", value, label}] drawn as labelled lines across the plot (a deadline, a budget).
export const scatterChart = responsive(({ points, xLabel, yLabel, cLabel, xLog = false, yLog = false, title, onPick, bandsLabel,
  limits = [] }, W) => {
  const { svg, px, py, left } = frame(W, { title, xLabel, yLabel, xLog, yLog,
    xs: points.flatMap((p) => [p.x, ...(p.xBand || [])]).concat(limits.filter((l) => l.axis === "x").map((l) => l.value)),
    ys: points.flatMap((p) => [p.y, ...(p.yBand || [])]).concat(limits.filter((l) => l.axis === "y").map((l) => l.value)) });
  limits.forEach((l, i) => {  // a vertical line's label beside it at the top, a horizontal one's above it at the left
    const vertical = l.axis === "x", at = vertical ? px(l.value) : py(l.value);
    svg.append(svgEl("line", vertical ? { x1: at, x2: at, y1: M.top, y2: H - M.bottom, class: "marker limit" }
      : { x1: left, x2: W - M.right, y1: at, y2: at, class: "marker limit" }));
    const before = vertical && at + 4 + textWidth(l.label) > W - M.right;
    svg.append(svgEl("text", vertical ? { x: before ? at - 4 : at + 4, y: M.top + 14 + 14 * i, class: "marker-label",
      "text-anchor": before ? "end" : "start" } : { x: left + 4, y: at - 4, class: "marker-label" }, l.label));
  });
  const cs = points.map((p) => p.c).filter((c) => c !== undefined && c !== null);
  const categorical = cs.some((c) => typeof c !== "number");
  const categories = categorical ? [...new Set(cs.map(String))] : [];
  const cScale = !categorical && cs.length ? scale(cs, false, 0) : null;
  const colourOf = (p) => {
    if (p.c === undefined || p.c === null) return "#999999";
    if (categorical) return PALETTE[categories.indexOf(String(p.c)) % PALETTE.length];
    const t = Math.min(Math.max(cScale.f(p.c), 0), 1);  // cividis-like ramp: dark blue to yellow
    const r = Math.round(0 + t * 253), g = Math.round(32 + t * 199), b = Math.round(77 + t * (56 - 77));
    return `rgb(${r},${g},${b})`;
  };
  const bars = svgEl("g", { class: "error-bars" });
  for (const p of points) {
    if (!Number.isFinite(p.x) || !Number.isFinite(p.y)) continue;
    if (p.xBand && p.xBand.every(Number.isFinite)) bars.append(svgEl("line", { x1: px(p.xBand[0]), x2: px(p.xBand[1]), y1: py(p.y), y2: py(p.y), class: "error-bar" }));
    if (p.yBand && p.yBand.every(Number.isFinite)) bars.append(svgEl("line", { x1: px(p.x), x2: px(p.x), y1: py(p.yBand[0]), y2: py(p.yBand[1]), class: "error-bar" }));
  }
  svg.append(bars);
  const layer = svgEl("g", { class: "points" });
  const ordinary = points.filter((p) => !p.highlight), front = points.filter((p) => p.highlight);
  for (const p of ordinary.concat(front)) {
    if (!Number.isFinite(p.x) || !Number.isFinite(p.y) || (xLog && p.x <= 0) || (yLog && p.y <= 0)) continue;
    const dot = p.highlight
      ? svgEl("rect", { x: px(p.x) - 5, y: py(p.y) - 5, width: 10, height: 10, fill: colourOf(p), stroke: "#000", "stroke-width": 2, class: "front" })
      : p.rejected
        ? svgEl("circle", { cx: px(p.x), cy: py(p.y), r: 3.5, fill: "none", stroke: "#888", "stroke-width": 1.5, class: "rejected" })
        : svgEl("circle", { cx: px(p.x), cy: py(p.y), r: 3, fill: colourOf(p), "fill-opacity": 0.75 });
    dot.append(svgEl("title", {}, p.label));
    if (onPick) dot.addEventListener("click", () => onPick(p));
    layer.append(dot);
  }
  svg.append(layer);
  const frontSorted = front.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)).sort((a, b) => a.x - b.x);
  if (frontSorted.length > 1) {
    svg.insertBefore(svgEl("path", { d: frontSorted.map((p, j) => `${j ? "L" : "M"}${px(p.x)},${py(p.y)}`).join(""),
      fill: "none", stroke: "#000", "stroke-width": 1.5, "stroke-dasharray": "4 3" }), layer);
  }
  const items = [];
  if (bars.childElementCount) items.push({ name: bandsLabel || "error bars: each point's band", colour: "#555", marker: false });
  if (front.length) items.push({ name: `Pareto front (${front.length} point${front.length === 1 ? "" : "s"}, black squares)`, colour: "#000", dash: "4 3", marker: true });
  const rejected = points.filter((p) => p.rejected && !p.highlight).length;
  if (rejected) items.push({ name: `rejected by a constraint (${rejected}, hollow grey; hover for the reason)`, colour: "#888", marker: true });
  if (categorical) categories.forEach((c, i) => items.push({ name: `${cLabel} = ${c}`, colour: PALETTE[i % PALETTE.length], marker: true }));
  else if (cScale) items.push({ name: `${cLabel}: dark blue ${num(Math.min(...cs))} to yellow ${num(Math.max(...cs))}`, colour: "rgb(253,231,56)", marker: true });
  return [svg, items.length ? legend(items) : null];
});

// groups: labels along x; series: [{name, values: [] per group}]
export const barChart = responsive(({ groups, series, yLabel, title }, W) => {
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "chart" });
  svg.append(svgEl("title", {}, title || yLabel));
  const ys = series.flatMap((s) => s.values).filter(Number.isFinite).concat([0]);
  const y = scale(ys, false, 0.02);
  const py = (v) => H - M.bottom - y.f(v) * (H - M.top - M.bottom);
  const left = yAxis(svg, y.ticks, py, yLabel, W);
  const band = (W - left - M.right) / groups.length;
  const bar = (band * 0.8) / series.length;
  groups.forEach((g, gi) => {
    series.forEach((s, si) => {
      const v = s.values[gi];
      if (!Number.isFinite(v)) return;
      const x0 = left + gi * band + band * 0.1 + si * bar;
      const rect = svgEl("rect", { x: x0, y: Math.min(py(v), py(0)), width: bar - 2, height: Math.abs(py(0) - py(v)),
        fill: PALETTE[si % PALETTE.length], class: `bar pattern-${si % 4}` });
      rect.append(svgEl("title", {}, `${s.name}, ${g}: ${num(v)}`));
      svg.append(rect);
      svg.append(svgEl("text", { x: x0 + (bar - 2) / 2, y: py(v) - 4, "text-anchor": "middle", class: "value" }, num(v, 2)));
    });
    // A group label wider than its band is split at hyphens or spaces over lines.
    const label = svgEl("text", { y: H - M.bottom + 16, "text-anchor": "middle" });
    const centre = left + gi * band + band / 2;
    const lines = textWidth(g) > band - 4 ? String(g).split(/(?<=[- ])/) : [g];
    const rows = [];
    for (const word of lines) {
      if (rows.length && textWidth(rows.at(-1) + word) <= band - 4) rows[rows.length - 1] += word;
      else rows.push(word);
    }
    rows.forEach((row, r) => label.append(svgEl("tspan", { x: centre, dy: r ? 12 : 0 }, row)));
    svg.append(label);
  });
  return [svg, series.length > 1 ? legend(series.map((s, i) => ({ name: s.name, colour: PALETTE[i % PALETTE.length] }))) : null];
});

// One horizontal bar split into parts (e.g. where a training step's time goes): each segment is
// labelled in the legend with its value and share, so the split is readable without colour.
export const stackedBar = responsive(({ parts, unit = "s", title, format = num }, W) => {
  const shown = parts.filter((p) => Number.isFinite(p.value) && p.value > 0);
  const total = shown.reduce((sum, p) => sum + p.value, 0);
  const height = 48, left = 8, right = 8;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${height}`, role: "img", class: "chart stacked" });
  svg.append(svgEl("title", {}, title));
  let x = left;
  shown.forEach((p, i) => {
    const width = (p.value / total) * (W - left - right);
    const rect = svgEl("rect", { x, y: 8, width: Math.max(width, 0.5), height: 32, fill: STACK_PALETTE[i % STACK_PALETTE.length],
      class: `bar pattern-${i % 4}`, "data-part": p.name });
    rect.append(svgEl("title", {}, `${p.name}: ${format(p.value)}${unit ? ` ${unit}` : ""} (${num(100 * p.value / total, 2)}%)`));
    svg.append(rect);
    x += width;
  });
  return [svg, legend(shown.map((p, i) => ({ name: `${p.name}: ${format(p.value)}${unit ? ` ${unit}` : ""} (${num(100 * p.value / total, 2)}%)`,
    colour: STACK_PALETTE[i % STACK_PALETTE.length], marker: true })))];
});
