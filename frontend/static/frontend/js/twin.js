// A live twin: a heatmap of nodes, metrics and the event feed, all from the websocket
// (a snapshot, then deltas); controls and injections go through the REST API.
import { api, el, errorLines, socket } from "./api.js";
import { count, duration, num, percent } from "./format.js";

// State code -> colour and mark; every bad state also carries a mark, not only a colour.
const STATES = {
  healthy: { colour: "#56B4E9", mark: "" },
  degraded: { colour: "#F0E442", mark: "dot" },
  failed: { colour: "#D55E00", mark: "cross" },
  "under repair": { colour: "#CC79A7", mark: "dot" },
  drained: { colour: "#999999", mark: "slash" },
  "cut off (leaf switch down)": { colour: "#E69F00", mark: "bar" },
};
const PRIORITY = { failed: 5, "under repair": 4, "cut off (leaf switch down)": 3, drained: 2, degraded: 1, healthy: 0 };
const MAX_EVENTS = 200;

export function twinForm(form, errors) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { plan: form.elements.plan.value, name: form.elements.name.value, speed: Number(form.elements.speed.value),
      seed: Number(form.elements.seed.value), visibility: form.elements.visibility.value,
      exclude_after: Number(form.elements.exclude_after.value), ...(form.elements.workload.value && { workload: form.elements.workload.value }),
      ...(form.elements.spare_nodes.value !== "" && { spare_nodes: Number(form.elements.spare_nodes.value) }) };
    const response = await api("/api/twins/", { method: "POST", body });
    if (response.ok) { location.assign(`/twins/${response.data.id}/`); return; }
    errors.hidden = false;
    errors.replaceChildren(el("ul", {}, errorLines(response.data).map((line) => el("li", {}, line))));
  });
}

export function twinPage(id) {
  const canvas = document.getElementById("heatmap");
  const detail = document.getElementById("node-detail");
  const twin = { names: [], gpu: [], node: [], gpn: 1, metrics: null, events: [], selected: null };
  let cols = 1, cell = 8;

  const stateOf = (code) => twin.names[code] ?? String(code);
  const nodeState = (n) => {
    let worst = stateOf(twin.node[n]);
    for (let g = n * twin.gpn; g < (n + 1) * twin.gpn; g++) {
      const s = stateOf(twin.gpu[g]);
      if (PRIORITY[s] > PRIORITY[worst]) worst = s;
    }
    return worst;
  };

  const draw = () => {
    const nodes = twin.node.length;
    const width = Math.min(canvas.parentElement.clientWidth || 600, 720);
    cols = Math.max(1, Math.ceil(Math.sqrt(nodes * 2)));
    cell = Math.max(4, Math.floor(width / cols));
    const rows = Math.ceil(nodes / cols);
    canvas.width = cols * cell;
    canvas.height = rows * cell;
    const ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    for (let n = 0; n < nodes; n++) paint(ctx, n);
  };
  const paint = (ctx, n) => {
    const x = (n % cols) * cell, y = Math.floor(n / cols) * cell;
    const style = STATES[nodeState(n)] ?? STATES.healthy;
    ctx.fillStyle = style.colour;
    ctx.fillRect(x, y, cell - 1, cell - 1);
    ctx.strokeStyle = "#000";
    ctx.lineWidth = 1;
    if (style.mark === "cross" && cell >= 5) {
      ctx.beginPath(); ctx.moveTo(x + 1, y + 1); ctx.lineTo(x + cell - 2, y + cell - 2);
      ctx.moveTo(x + cell - 2, y + 1); ctx.lineTo(x + 1, y + cell - 2); ctx.stroke();
    } else if (style.mark === "slash" && cell >= 5) {
      ctx.beginPath(); ctx.moveTo(x + 1, y + cell - 2); ctx.lineTo(x + cell - 2, y + 1); ctx.stroke();
    } else if (style.mark === "bar" && cell >= 5) {
      ctx.beginPath(); ctx.moveTo(x + 1, y + cell / 2); ctx.lineTo(x + cell - 2, y + cell / 2); ctx.stroke();
    } else if (style.mark === "dot" && cell >= 5) {
      ctx.fillStyle = "#000"; ctx.fillRect(x + cell / 2 - 1, y + cell / 2 - 1, 2, 2);
    }
    if (n === twin.selected) { ctx.lineWidth = 2; ctx.strokeRect(x + 1, y + 1, cell - 3, cell - 3); }
  };

  const showNode = (n) => {
    if (n === null || n < 0 || n >= twin.node.length) return;
    twin.selected = n;
    const gpus = [];
    for (let i = 0; i < twin.gpn; i++) {
      const g = n * twin.gpn + i;
      gpus.push(el("li", { class: `state-${stateOf(twin.gpu[g]).replace(" ", "-")}`, "data-gpu": g },
        `GPU ${i} (cluster GPU ${g}): ${stateOf(twin.gpu[g])}`));
    }
    const recent = twin.events.filter((e) => e.node === n).slice(0, 5);
    detail.replaceChildren(el("h3", {}, `Node ${n}: ${stateOf(twin.node[n])}`), el("ul", { class: "gpus" }, gpus),
      recent.length ? el("p", {}, "Latest events here:") : "", el("ul", {}, recent.map((e) => el("li", {}, e.message))));
    draw();
  };

  canvas.addEventListener("click", (event) => {
    const box = canvas.getBoundingClientRect();
    const scaleX = canvas.width / box.width, scaleY = canvas.height / box.height;
    const col = Math.floor(((event.clientX - box.left) * scaleX) / cell), row = Math.floor(((event.clientY - box.top) * scaleY) / cell);
    const n = row * cols + col;
    if (col < cols && n < twin.node.length) showNode(n);
  });
  canvas.addEventListener("keydown", (event) => {
    const moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols };
    if (event.key in moves) {
      event.preventDefault();
      showNode(Math.min(Math.max((twin.selected ?? 0) + moves[event.key], 0), twin.node.length - 1));
    } else if (event.key === "Enter") showNode(twin.selected ?? 0);
  });

  // Nodes by their worst state (a node with one failed GPU counts as failed), GPUs by their own.
  const legend = () => {
    const nodes = Object.fromEntries(Object.keys(STATES).map((name) => [name, 0]));
    for (let n = 0; n < twin.node.length; n++) nodes[nodeState(n)] += 1;
    const gpus = twin.metrics?.gpus_by_state ?? {};
    const swatch = (s) => {  // coloured through the CSSOM: the CSP refuses style attributes
      const span = el("span", { class: `swatch mark-${s.mark || "none"}` });
      span.style.background = s.colour;
      return span;
    };
    document.getElementById("twin-legend").replaceChildren(...Object.entries(STATES).map(([name, s]) =>
      el("li", {}, swatch(s), ` ${name}: ${count(nodes[name] ?? 0, "node")}, ${count(gpus[name] ?? 0, "GPU")}`)));
  };

  const metrics = () => {
    const m = twin.metrics;
    if (!m) return;
    document.getElementById("twin-clock").textContent = duration(m.time_s);
    const tiles = [["nodes in service", m.availability === undefined ? "–" : percent(m.availability)],
      ["nodes running a job", percent(m.utilization)], ["goodput", `${num(m.goodput_gpu_hours)} GPU-h`],
      ["lost", `${num(m.lost_gpu_hours)} GPU-h`], ["interruptions", num(m.interruptions)],
      ["leaf switches down", num(m.leaf_switches_down ?? 0)]];
    const started = document.getElementById("twin-status").textContent !== "created";
    // A job's tile takes a whole row: its progress in bold, the rest in a line under it.
    const jobTiles = m.jobs.map((job) => el("div", { class: "tile job" }, el("dt", {}, `job ${job.name} (${count(job.nodes, "node")})`),
      el("dd", {}, started ? `${job.state}, ${percent(job.progress)} done` : "not started: press Start",
        started ? el("span", { class: "tile-detail" }, `ETTR ${percent(job.ettr)} (closed form ${percent(job.ettr_closed_form)}), `
          + `${num(job.interruptions)} interruptions, goodput ${num(job.goodput_gpu_hours)} GPU-h`
          + (job.forecast_remaining_s !== null ? `, ${duration(job.forecast_remaining_s)} to go` : "")) : "")));
    document.getElementById("twin-metrics").replaceChildren(
      ...tiles.map(([k, v]) => el("div", { class: "tile" }, el("dt", {}, k), el("dd", {}, v))), ...jobTiles);
    legend();
  };

  const CATEGORY_NAMES = JSON.parse(document.getElementById("category-names").textContent);
  const events = (fresh) => {
    twin.events = [...fresh.slice().reverse(), ...twin.events].slice(0, MAX_EVENTS);
    document.getElementById("twin-events").replaceChildren(...twin.events.map((e) =>
      el("li", { "data-category": e.category || "", "data-kind": e.kind, title: CATEGORY_NAMES[e.category] ?? "" },
        el("time", {}, duration(e.time_s)), " ", el("strong", {}, e.kind), " ", e.message)));
  };

  socket(`/ws/twins/${id}/`, (message) => {
    if (message.type === "snapshot") {
      twin.names = message.state_names;
      twin.gpu = message.gpu_state;
      twin.node = message.node_state;
      twin.gpn = message.gpus_per_node;
      twin.metrics = message.metrics;
      twin.events = [];
      events(message.events);
    } else {
      for (const [g, s] of message.gpus ?? []) twin.gpu[g] = s;
      for (const [n, s] of message.nodes ?? []) twin.node[n] = s;
      if (message.metrics) twin.metrics = message.metrics;
      if (message.events?.length) events(message.events);
    }
    if (message.status) document.getElementById("twin-status").textContent = message.status;
    if (message.speed !== undefined) document.getElementById("twin-speed").textContent = num(message.speed);
    metrics();
    if (twin.selected !== null) showNode(twin.selected); else draw();
  }, (s) => { document.getElementById("socket-status").textContent = s === "live" ? "live" : s; });

  const controls = document.getElementById("twin-controls");
  const errors = document.getElementById("control-errors");
  const report = (response) => {
    errors.hidden = response.ok;
    errors.textContent = response.ok ? "" : errorLines(response.data).join(" ");
    return response.ok;
  };
  controls?.addEventListener("click", async (event) => {
    const action = event.target.dataset?.action;
    if (!action) return;
    const body = action === "speed" ? { speed: Number(controls.elements.speed.value) } : undefined;
    report(await api(`/api/twins/${id}/${action}/`, { method: "POST", body }));
  });
  const buses = document.getElementById("twin-buses");
  buses?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const list = buses.elements.pci_bus_ids.value.split(/[\s,]+/).filter(Boolean);
    const saved = report(await api(`/api/twins/${id}/pci-bus-ids/`, { method: "POST", body: { pci_bus_ids: list } }));
    document.getElementById("buses-status").textContent = saved ? "Saved: Xid lines are mapped by these addresses." : "";
  });
  const inject = document.getElementById("twin-inject");
  inject?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const category = inject.elements.category;
    const { unit, cause } = category.selectedOptions[0].dataset;
    const node = Number(inject.elements.node.value), gpu = Number(inject.elements.gpu.value);
    const target = cause === "job" ? { job: Number(inject.elements.job.value) }
      : unit === "gpu" ? { gpu: node * twin.gpn + gpu } : unit === "node" ? { node } : { part: Number(inject.elements.part.value) };
    if (report(await api(`/api/twins/${id}/inject/`, { method: "POST", body: { category: category.value, ...target } }))) showNode(node);
  });
  const upload = document.getElementById("twin-log");
  upload?.addEventListener("submit", (event) => { event.preventDefault(); ingestLog(id, upload); });
  window.addEventListener("resize", draw);
}

// A kernel log through POST /api/twins/{id}/ingest-log/: a small one answers at once, a large one is
// ingested by a task whose progress is polled until it ends.
async function ingestLog(id, form) {
  const out = document.getElementById("log-result");
  const data = new FormData();
  data.append("file", form.elements.file.files[0]);
  data.append("node", form.elements.node.value);
  data.append("timezone", form.elements.timezone.value || "UTC");
  if (form.elements.boot_time.value) data.append("boot_time", form.elements.boot_time.value);
  if (form.elements.year.value) data.append("year", form.elements.year.value);
  out.className = "";
  out.textContent = "Reading the log…";
  let response = await api(`/api/twins/${id}/ingest-log/`, { method: "POST", body: data });
  while (response.ok && ["queued", "running"].includes(response.data?.status)) {
    out.textContent = `Reading the log: ${num(response.data.lines_read)} of ${num(response.data.lines_total)} lines…`;
    await new Promise((resolve) => { setTimeout(resolve, 1000); });
    response = await api(`/api/twins/${id}/ingests/${response.data.id}/`);
  }
  const result = response.status === 201 ? response.data : response.data?.status === "done" ? response.data.result : null;
  if (!result) {
    const reasons = !response.ok ? response.data : response.data.errors ? { errors: response.data.errors } : response.data.error;
    out.className = "error";
    out.replaceChildren(el("p", {}, "The log was not ingested:"),
      el("ul", {}, errorLines(reasons).map((line) => el("li", {}, line))));
    return;
  }
  const problems = result.malformed.map((m) => el("li", {}, `line ${num(m.line)}: ${m.reason}`));
  out.replaceChildren(el("p", {}, `${num(result.lines)} lines read: ${num(result.xid_lines)} Xid lines, ` +
    `${num(result.faults)} fault${result.faults === 1 ? "" : "s"} ingested, ${num(result.noted)} needing no action, ` +
    `${num(result.skipped_lines)} other lines skipped` +
    (result.already_ingested ? `; ${num(result.already_ingested)} already ingested from an earlier upload, not applied again.` : ".")), problems.length ? el("ul", { class: "error" }, problems) : "");
}
