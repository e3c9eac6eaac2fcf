// Sweeps: the submission form, then live progress over a websocket and an interactive chart.
import { api, el, socket } from "./api.js";
import { placeErrors } from "./form.js";
import { scatterChart } from "./charts.js";
import { num, si } from "./format.js";

const MAX_CHART_POINTS = 10000;

// "64, 128" -> list; "200..1240 step 40" -> {start, stop, step}; "1..4 n 7" -> {start, stop, steps}.
function parseValues(text) {
  const range = text.match(/^\s*(-?[\d.e+]+)\s*\.\.\s*(-?[\d.e+]+)\s*(step|n)\s*([\d.e+]+)\s*$/i);
  if (range) {
    const [, start, stop, kind, by] = range;
    return kind.toLowerCase() === "step" ? { start: Number(start), stop: Number(stop), step: Number(by) }
      : { start: Number(start), stop: Number(stop), steps: Number(by) };
  }
  return text.split(",").map((v) => v.trim()).filter(Boolean).map((v) => (Number.isFinite(Number(v)) ? Number(v) : v));
}

export function sweepForm(form, errors) {
  // Each Pareto metric's direction follows the output registry's better way until the user picks one.
  for (const axis of ["x", "y"]) {
    const metric = form.elements[`pareto-${axis}`], sense = form.elements[`pareto-${axis}-sense`];
    sense.addEventListener("change", () => { sense.dataset.touched = "1"; });
    metric.addEventListener("change", () => {
      if (!sense.dataset.touched) sense.value = metric.selectedOptions[0]?.dataset.better === "higher" ? "max" : "min";
    });
  }
  document.getElementById("add-axis").addEventListener("click", () => {
    const rows = form.querySelectorAll(".axis-row");
    const copy = rows[rows.length - 1].cloneNode(true);
    copy.querySelectorAll("input").forEach((input) => { input.value = ""; });
    rows[rows.length - 1].after(copy);
    copy.querySelector("input").focus();
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const axes = {};
    form.querySelectorAll(".axis-row").forEach((row) => {
      const path = row.querySelector("[name=axis-path]").value.trim();
      const values = row.querySelector("[name=axis-values]").value.trim();
      if (path && values) axes[path] = parseValues(values);
    });
    const body = { plan: form.elements.plan.value, name: form.elements.name.value, axes };
    if (form.elements.workload.value) body.workload = form.elements.workload.value;
    const sense = form.elements.sense.value;
    if (sense) {
      const constraints = [...form.querySelectorAll(".constraint-row")].map((row) => {
        const metric = row.querySelector("[name=c-metric]").value;
        const min = row.querySelector("[name=c-min]").value, max = row.querySelector("[name=c-max]").value;
        if (!metric) return null;
        return { metric, ...(min !== "" && { min: Number(min) }), ...(max !== "" && { max: Number(max) }) };
      }).filter(Boolean);
      body.goal = { [sense]: form.elements.objective.value, constraints };
      const px = form.elements["pareto-x"].value, py = form.elements["pareto-y"].value;
      if (px && py) {
        body.goal.pareto = [{ x: px, y: py, x_sense: form.elements["pareto-x-sense"].value,
          y_sense: form.elements["pareto-y-sense"].value }];
      }
    }
    const response = await api("/api/sweeps/", { method: "POST", body });
    if (response.ok) { location.assign(`/sweeps/${response.data.id}/`); return; }
    if (response.status === 429) {
      errors.hidden = false;
      errors.replaceChildren(el("p", {}, "Too many sweeps submitted; wait a moment."));
      return;
    }
    placeErrors(form, errors, response.data);
  });
}

// The site form as the API's nested request: empty numbers are null (no such limit).
export function siteForm(form, errors) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const f = form.elements, number = (name) => (f[name].value === "" ? null : Number(f[name].value));
    const body = {
      name: f.name.value, price_book: f.price_book.value, budget: number("budget"),
      builds: [...form.querySelectorAll("input[name=builds]:checked")].map((box) => box.value),
      facility: { power_mw: number("power_mw"), floor_racks: number("floor_racks"), rack_power_kw: number("rack_power_kw"),
        cooling: f.cooling.value, hall: f.hall.value, pue: number("pue"), storage_write_gbyte_s: number("storage_write_gbyte_s") },
      goal: { workload: f.workload.value, objective: f.objective.value, deadline: f.deadline.value || null,
        tokens: number("tokens"), confidence: number("confidence"), rent_term: f.rent_term.value },
    };
    const response = await api("/api/sweeps/site/", { method: "POST", body });
    if (response.ok) { location.assign(`/sweeps/${response.data.id}/`); return; }
    if (response.status === 429) {
      errors.hidden = false;
      errors.replaceChildren(el("p", {}, "Too many plans submitted; wait a moment."));
      return;
    }
    placeErrors(form, errors, response.data);
  });
}

// Non-dominated points of (x, y) under the chosen directions: sort by x, keep each y better than all before.
function paretoFront(points, xdir, ydir) {
  const sx = xdir === "max" ? -1 : 1, sy = ydir === "max" ? -1 : 1;
  const sorted = points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y))
    .sort((a, b) => sx * (a.x - b.x) || sy * (a.y - b.y));
  const front = new Set();
  let best = Infinity;
  for (const p of sorted) {
    if (sy * p.y < best) { best = sy * p.y; front.add(p.point); }
  }
  return front;
}

// The server spreads the chart's points over the whole grid and always adds the optimum and the
// Pareto fronts (GET /api/sweeps/{id}/sample/).
async function loadSample(id) {
  const response = await api(`/api/sweeps/${id}/sample/?points=${MAX_CHART_POINTS}`);
  return response.ok ? response.data : { results: [], total_points: 0 };
}

// The goal's outcome: how many points meet it, the optimum with its axis values and objective, or what binds.
function goalSummary(container, goal, rows, names) {
  if (!goal) { container.replaceChildren(); return; }
  const items = [`${num(goal.feasible)} of ${num(goal.valid)} valid points meet every constraint.`];
  const best = rows.find((r) => r.point === goal.optimum);
  if (best) {
    const axes = Object.entries(best.axes).map(([k, v]) => `${nameOf(names, `axis:${k}`)} = ${typeof v === "number" ? num(v) : v}`);
    items.push(`Best point (${goal.sense}imise ${nameOf(names, goal.objective)}): #${goal.optimum}, ` +
      `${axes.join(", ")}; ${nameOf(names, goal.objective)} = ${num(best.outputs[goal.objective])}.`);
  } else if (goal.optimum !== null && goal.optimum !== undefined) items.push(`Best point (${goal.sense}imise ${goal.objective}): #${goal.optimum}.`);
  else if (goal.binding) items.push(`Nothing meets the goal; binding constraint: ${goal.binding.constraint} (${goal.binding.reason}).`);
  for (const [metric, n] of Object.entries(goal.rejected_by || {})) items.push(`${metric} rejected ${num(n)} points.`);
  container.replaceChildren(el("ul", { class: "notes" }, items.map((t) => el("li", {}, t))));
}

// A site plan's sweep charts every point's time to train against buying and running the build.
const SITE_CHART = { x: "training.time_to_train_days", y: "training.buy_and_run_cost" };

// The chart's names for axes and outputs: label and unit (sweep-names, from the page), else the path.
const NAMES = () => JSON.parse(document.getElementById("sweep-names").textContent);
const nameOf = (names, key) => names[key] ?? key.replace(/^axis:/, "");

// The goal's stored front for the chart's x and y, if it has one.
const storedFront = (goal, controls) => goal?.pareto?.find((f) => `${f.x}` === controls.x.value && `${f.y}` === controls.y.value);

function chart(rows, controls, goal, names) {
  const key = (name) => (name.startsWith("axis:") ? (r) => r.axes[name.slice(5)] : (r) => r.outputs[name]);
  const x = key(controls.x.value), y = key(controls.y.value), c = controls.c.value ? key(controls.c.value) : null;
  const valid = rows.filter((r) => r.valid);
  const points = valid.map((r) => ({ point: r.point, x: x(r), y: y(r), c: c ? c(r) : undefined,
    rejected: r.rejected_by?.length ? r.rejected_by : null,
    label: `point #${r.point}: ${Object.entries(r.axes).map(([k, v]) => `${nameOf(names, `axis:${k}`)} = ${v}`).join(", ")}; ` +
      `${nameOf(names, controls.x.value)} = ${num(x(r))}, ${nameOf(names, controls.y.value)} = ${num(y(r))}` +
      (r.rejected_by?.length ? `; rejected: fails ${r.rejected_by.join(" and ")}` : "") }));
  const stored = storedFront(goal, controls);
  const front = stored && stored.x_sense === controls.xdir.value && stored.y_sense === controls.ydir.value
    ? new Set(stored.points) : paretoFront(points, controls.xdir.value, controls.ydir.value);
  points.forEach((p) => { p.highlight = front.has(p.point); });
  const figure = document.getElementById("sweep-chart");
  scatterChart(figure, { points, xLabel: nameOf(names, controls.x.value), yLabel: nameOf(names, controls.y.value),
    cLabel: nameOf(names, controls.c.value), xLog: controls.xlog.checked, yLog: controls.ylog.checked,
    title: `${nameOf(names, controls.y.value)} against ${nameOf(names, controls.x.value)}`,
    onPick: (p) => { document.getElementById("picked").textContent = p.label; } });
  return { front, valid: valid.length, rejected: points.filter((p) => p.rejected).length };
}

// A site plan's builds: each best point's time to train against its cost, coloured by facility power (MW),
// the Pareto front over the builds in black squares.
function siteChart() {
  const data = document.getElementById("site-builds");
  if (!data) return;
  const bands = document.getElementById("site-chart-bands"), figure = document.getElementById("site-chart");
  const points = JSON.parse(data.textContent).filter((b) => b.point !== null).map((b) => ({
    point: b.point, x: b.time_to_train_days, y: b.cost, c: b.name, highlight: b.pareto,
    xBand: bands.checked ? [b.time_band.days_low, b.time_band.days_high] : null,
    yBand: bands.checked && b.ownership === "owned" ? [b.cost - b.capex + b.capex_low, b.cost - b.capex + b.capex_high] : null,
    label: `${b.name}, ${b.layers} layers, ${b.ownership}: ${num(b.gpus)} GPUs, ${num(b.time_to_train_days)} days `
      + `(typically ${num(b.time_band.days_low)} to ${num(b.time_band.days_high)}), cost ${num(b.cost)}` }));
  if (!points.length) {  // no axes to draw empty: say why
    figure.replaceChildren(el("p", { class: "muted" }, "No build meets every limit of the site: no best point to chart."));
    return;
  }
  const { deadlineDays, budget } = figure.dataset, limits = [];
  if (deadlineDays) limits.push({ axis: "x", value: Number(deadlineDays), label: `deadline, ${num(Number(deadlineDays))} days` });
  if (budget) limits.push({ axis: "y", value: Number(budget), label: `budget, ${si(Number(budget))} ${figure.dataset.currency}` });
  scatterChart(figure, { points, xLabel: "time to train (days)", yLabel: `cost (${figure.dataset.currency})`,
    cLabel: "build", title: "Each build's best point: time to train against cost", limits,
    bandsLabel: "error bars: the time's band and, owned, the price's band" });
}

export function sweepPage(id) {
  siteChart();
  document.getElementById("site-chart-bands")?.addEventListener("change", siteChart);
  const bar = document.getElementById("sweep-progress"), percent = document.getElementById("sweep-percent");
  const status = document.getElementById("sweep-status"), error = document.getElementById("sweep-error");
  const cancel = document.getElementById("sweep-cancel");
  let shown = false;
  cancel.addEventListener("click", async () => { await api(`/api/sweeps/${id}/cancel/`, { method: "POST" }); });
  const showResults = async () => {
    if (shown) return;
    shown = true;
    const sweep = (await api(`/api/sweeps/${id}/`)).data;
    const sample = await loadSample(id);
    const rows = sample.results;
    if (!rows.length) return;
    const section = document.getElementById("sweep-results");
    section.hidden = false;
    const labels = NAMES(), better = JSON.parse(document.getElementById("sweep-better").textContent);
    goalSummary(document.getElementById("goal-result"), sweep.goal_result, rows, labels);
    const controls = document.getElementById("chart-controls").elements;
    const names = [...Object.keys(rows[0].axes).map((a) => `axis:${a}`), ...Object.keys(rows[0].outputs)];
    const numeric = names.filter((n) => rows.some((r) => typeof (n.startsWith("axis:") ? r.axes[n.slice(5)] : r.outputs[n]) === "number"));
    const option = (n) => el("option", { value: n }, `${n.startsWith("axis:") ? "axis: " : ""}${nameOf(labels, n)}`);
    for (const select of [controls.x, controls.y]) select.replaceChildren(...numeric.map(option));
    controls.c.append(...names.map(option));
    // The page's question: a goal's Pareto pair; a site plan's time to train against its cost; else the
    // first axis against what the goal optimizes, or the capital cost.
    const pareto = sweep.goal_result?.pareto?.[0], site = sweep.site ? SITE_CHART : null;
    const optimized = sweep.spec?.goal?.minimize ?? sweep.spec?.goal?.maximize;
    controls.x.value = pareto?.x ?? (site && numeric.includes(site.x) ? site.x : numeric[0]);
    controls.y.value = pareto?.y ?? (site && numeric.includes(site.y) ? site.y
      : numeric.find((n) => n === optimized) || numeric.find((n) => n === "cost.capex_total") || numeric[1]
        || numeric[0]);
    if (site) controls.xlog.checked = controls.ylog.checked = true;  // days and costs over decades: log scales
    if (site && "site.build" in rows[0].axes) controls.c.value = "axis:site.build";
    else if (Object.keys(rows[0].axes).length > 1) controls.c.value = `axis:${Object.keys(rows[0].axes)[1]}`;
    const draw = () => {
      const stored = storedFront(sweep.goal_result, controls);
      for (const [axis, select, dir] of [["x", controls.x, controls.xdir], ["y", controls.y, controls.ydir]]) {
        if (!dir.dataset.touched) dir.value = stored?.[`${axis}_sense`] ?? (better[select.value] === "higher" ? "max" : "min");
      }
      const { front, valid, rejected } = chart(rows, controls, sweep.goal_result, labels);
      document.getElementById("chart-note").textContent = `${num(valid)} valid point${valid === 1 ? "" : "s"} shown` +
        (rejected ? ` (${num(rejected)} rejected by the goal's constraints: hollow grey)` : "") +
        (sample.total_points > rows.length ? ` (a sample of ${num(rows.length)} spread over all ${num(sample.total_points)}, ` +
          "the optimum and the Pareto fronts included; download for all)" : "") +
        `; ${front.size} on the Pareto front. Click a point for its values.`;
    };
    controls.xdir.addEventListener("change", () => { controls.xdir.dataset.touched = "1"; });
    controls.ydir.addEventListener("change", () => { controls.ydir.dataset.touched = "1"; });
    document.getElementById("chart-controls").addEventListener("change", draw);
    draw();
  };
  socket(`/ws/sweeps/${id}/`, (state) => {
    const value = Math.round(state.progress * 100);
    bar.value = value;
    percent.textContent = `${value}%`;
    status.textContent = state.status;
    cancel.hidden = !["pending", "running"].includes(state.status);
    error.hidden = !state.error;
    error.textContent = state.error || "";
    if (state.status === "done") {
      if (document.getElementById("site-waiting")) location.reload();  // the ranking is drawn by the server
      showResults();
    }
  }, (s) => { document.getElementById("socket-status").textContent = s === "live" ? "live" : s; });
}
