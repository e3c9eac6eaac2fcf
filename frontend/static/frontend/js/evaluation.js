// An evaluation (POST /api/plans/{slug}/evaluate/ or /api/plans/preview/) drawn as tables and charts.
import { el } from "./api.js";
import { barChart, lineChart, stackedBar } from "./charts.js";
import { count, duration, num, percent, si } from "./format.js";
import { drawTopology } from "./topology.js";

// A price in the summaries: millions and up with an SI prefix (48.0 M USD), else in full; the bill of
// materials keeps every digit (``exact``).
const money = (value, currency, exact = false) => {
  if (value === null || value === undefined) return "not priced";
  return `${!exact && Math.abs(value) >= 1e6 ? si(value, "", 3) : num(value)} ${currency}`;
};

// A price with its band: "59.3 M USD (52.5 M to 70.3 M)"; no band where every part is quoted.
const withBand = (value, low, high, currency) => (value === null || value === undefined || low === null || low === undefined
  || low === high ? money(value, currency) : `${money(value, currency)} (${money(low, currency)} to ${money(high, currency)})`);

function table(caption, rows) {
  return el("table", { class: "kv" }, el("caption", {}, caption),
    el("tbody", {}, rows.filter(Boolean).map(([label, value, note]) =>
      el("tr", {}, el("th", { scope: "row" }, label), el("td", { class: "num" }, value), note ? el("td", { class: "muted" }, note) : el("td")))));
}

// How far to trust the training figures: the validation record of the workload's kind of run on the
// plan's GPU family, linked to those cases on the validation page (none without a workload).
export function trustNote(trust) {
  if (!trust) return null;
  const anchor = trust.models.length ? `#${slugify(trust.models[0])}` : "";
  return el("p", { class: trust.trusted ? "trust" : "trust warn", id: "trust-note" }, trust.message, " ",
    el("a", { href: `/validation/${anchor}` }, "See the validation record."));
}

// Parts known only from a vendor's announcement: every figure they give is announced, not measured.
export function announcedNote(parts) {
  if (!parts?.length) return null;
  return el("p", { class: "trust warn", id: "announced-note" }, el("strong", {}, "Announced, not shipping: "),
    parts.map((p) => `${p.part} ${p.name} (${p.source})`).join("; "),
    ". Its figures are the vendor's announcement and analysts' estimates; no part has been measured.");
}

// A trace's calibration carried here from another build of the family: the headline's training figures use
// its shares; beside them, the figures on the family's own constants and their band over the trace's ranks and steps.
export function carriedNote(carried, overrides, result) {
  if (!carried) return null;
  const origins = [...new Map(Object.values(overrides ?? {}).filter((o) => o.carried).map((o) => [o.measurement,
    `${o.name ?? "a trace"} on ${o.carried.node_type}${o.carried.plan ? ` (plan ${o.carried.plan})` : ""}`])).values()];
  const shares = Object.entries(carried.constants).map(([c, f]) => `${c} ${num(f.value, 4)} (${num(f.low, 4)} to ${num(f.high, 4)})`);
  const lines = [el("strong", {}, "Calibration carried from your trace: "), `${origins.join("; ")}: ${shares.join(", ")}.`];
  const step = result.training?.step_time_s;
  const spread = carried.spread?.["training.step_time_s"];
  if (carried.family && Number.isFinite(step)) {
    lines.push(" Step time ", el("span", { class: "carried-step" }, duration(step)),
      spread ? ` (${duration(spread[0])} to ${duration(spread[1])} over the trace's ranks and steps)` : "",
      " with the carried shares, against ", el("span", { class: "family-step" }, duration(carried.family["training.step_time_s"])),
      ` on the family's own constants; MFU ${percent(result.training.mfu)} against `,
      `${percent(carried.family["training.mfu"])}.`);
  }
  return el("p", { class: "trust", id: "carried-note" }, lines);
}

// Each headline prediction's error band from the validation record: where published runs like it
// came in, and on how many (marked where no run of this family and kind is validated); the total
// price's band from the price book's estimates.
const BANDED = { "training.step_time_s": "training step", "training.mfu": "MFU", "power.facility_w": "facility power",
  "cost.capex_total": "total price" };

export function bandsList(bands) {
  const paths = Object.keys(BANDED).filter((path) => bands?.[path]);
  if (!paths.length) return null;
  return el("ul", { class: "notes", id: "error-bands", "aria-label": "error bands" },
    paths.map((path) => el("li", { class: bands[path].validated ? "" : "warn", "data-path": path },
      el("strong", {}, `${BANDED[path]}: `), bands[path].message)));
}

const slugify = (text) => text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");

// The headline figures: used live by the builder and at the top of a plan's page. A figure its own
// error band does not hold (every published run like it missed one way) is flagged with the range
// runs like it came in at, never shown bare.
export function headline(result, bands = {}) {
  const c = result.cost, t = result.training;
  const tiles = [
    ["GPUs", num(result.cluster.gpus)],
    ["switches", num(result.fabric.switches)],
    ["total price", withBand(c.capex_total, c.capex_low, c.capex_high, c.currency)],
    ["facility power", si(result.power.facility_w, "W"), "power.facility_w", (v) => si(v, "W")],
    ["FP16 GEMM per GPU", `${num(result.compute.gemm_fp16_tflops)} TFLOPS`],
    ["platform interruptions per day", num(result.reliability.platform_interruptions_per_day)],
  ];
  if (t) tiles.push(["training step", duration(t.step_time_s), "training.step_time_s", duration], ["MFU", percent(t.mfu), "training.mfu", percent]);
  const tile = ([label, value, path, format]) => {
    const band = path ? bands?.[path] : null;
    const outside = band && band.headline_inside === false;
    const [low, high] = outside ? [format(band.actual_low), format(band.actual_high)] : [];
    return el("div", { class: outside ? "tile warn" : "tile", ...(path ? { "data-path": path } : {}) }, el("dt", {}, label),
      el("dd", {}, value, outside ? [el("br"), el("small", { class: "outside-band" },
        `outside its band: runs like it came in at ${low === high ? low : `${low} to ${high}`}`)] : ""));
  };
  return el("dl", { class: "tiles" }, tiles.map(tile));
}

export function constraintsList(result) {
  if (!result.constraints?.length) return null;
  return el("ul", { class: "notes", "aria-label": "constraints and caveats" }, result.constraints.map((c) => el("li", { "data-code": c.code }, c.message)));
}

// Measured constants that replaced the accelerator family's in this evaluation, each with its measurement.
function overridesList(overrides) {
  const entries = Object.entries(overrides ?? {});
  if (!entries.length) return null;
  return el("ul", { class: "notes overrides", "aria-label": "measured overrides" }, entries.map(([constant, o]) =>
    el("li", { "data-constant": constant }, `Overridden by measurement: ${constant} = ${num(o.value, 4)} from `,
      o.measurement === null ? "the plan owner's measurement" : el("a", { href: `#measurement-${o.measurement}` }, o.name),
      o.carried ? ` (${o.kind}, carried from ${o.carried.node_type}).` : ` (${o.kind}).`)));
}

// Owning a GPU an hour (capital over its stated life, every hour used, plus energy) against renting
// one for the same years at the cheapest term that covers them, and the book's price on every term.
function ownOrRent(c, bom) {
  const rentals = bom?.rentals ?? [];
  const owning = Number.isFinite(c.own_per_gpu_hour) ? money(c.own_per_gpu_hour, c.currency) : "unknown";
  return [
    ["owning a GPU, per hour", owning, Number.isFinite(c.own_per_gpu_hour)
      ? `capital over ${num(c.amortization_years)} years, every hour used, plus energy` : "needs every part and the energy priced"],
    ["renting a GPU, per hour", Number.isFinite(c.rent_per_gpu_hour) ? money(c.rent_per_gpu_hour, c.currency) : "no price",
      Number.isFinite(c.rent_per_gpu_hour) ? `${c.rent_term}: the cheapest term covering the same ${num(c.amortization_years)} years`
        : "the price book has no rental price for this GPU: add one as a GPU-hour quote"],
    ...rentals.map((r) => [`  ${r.term_label}`, money(r.unit_price, c.currency),
      el("span", { title: r.basis }, `${r.estimate ? "estimate" : "listed"}, ${r.price_date} (hover for its basis)`)]),
  ];
}

function costSection(result, bom) {
  const c = result.cost, currency = c.currency;
  const parts = [["compute nodes", c.compute_nodes], ...(result.power.storage_nodes_w > 0 ? [["storage nodes", c.storage_nodes]] : []),
    ["switches", c.switches],
    ["transceivers", c.transceivers], ["fibres", c.fibers], ["endpoint cables", c.endpoint_cables],
    ...(result.fabric.scaleup_transceivers ? [["scale-up optical modules", c.scaleup_transceivers], ["scale-up fibres", c.scaleup_fibers]] : [])];
  const section = el("section", {}, el("h2", {}, "Cost"),
    table(`Capital and running cost (${currency})`, [
      ...parts.map(([label, value]) => [label, money(value, currency)]),
      ["network (switches and cabling)", money(c.network, currency)],
      ["total price", withBand(c.capex_total, c.capex_low, c.capex_high, currency), c.unpriced_count
        ? `${c.unpriced_count} part(s) not priced: ${c.unpriced.join(", ")}` : c.capex_low !== c.capex_high
          ? "in brackets: the band from the estimated prices' lows and highs" : "every part quoted or listed"],
      ["energy per year", money(c.energy_per_year, currency), `${num(result.power.energy_per_year_kwh)} kWh`],
      ["price per FP16 PFLOPS", money(c.capex_per_fp16_pflops, currency)],
      ...ownOrRent(c, bom),
    ]));
  const priced = parts.filter(([, v]) => Number.isFinite(v));
  if (priced.length) {
    const chart = el("figure", { class: "chart-box" });
    section.append(chart);
    barChart(chart, { groups: priced.map(([l]) => l), series: [{ name: "price", values: priced.map(([, v]) => v) }], yLabel: currency });
    chart.prepend(el("figcaption", {}, "Capital cost by part"));
  }
  return section;
}

// The bill: each price with its basis, date and link, estimates marked with their low and high; an
// unpriced or estimated part links to the form that adds your quote for it (saved in your own copy of
// the plan's price book, which then prices your plan), an unchosen one to the plan's editor.
function bomSection(bom, plan) {
  if (!bom) return "";
  const quote = (line) => {
    if (line.slug === "(not chosen)") return el("a", { href: `/plans/${plan.slug}/edit/` }, "choose a part");
    if (line.source.startsWith("included") || (line.unit_price !== null && line.confidence !== "estimate")) return "";
    const query = new URLSearchParams({ part: `${line.part_kind}:${line.slug}`, plan: plan.slug });
    return el("a", { href: `/catalog/price-books/${bom.price_book}/?${query}#quote`, class: "quote-link" },
      line.unit_price === null ? "add your quote" : "replace with your quote");
  };
  const source = (line) => line.source_url ? el("a", { href: line.source_url, rel: "noopener noreferrer" }, line.source) : line.source;
  const short = (value) => money(value, "").trim();
  const band = (line) => line.confidence === "estimate"
    ? [el("br"), el("span", { class: "muted band" }, `${short(line.extended_low)} to ${short(line.extended_high)}`)] : "";
  const totalNote = bom.unpriced.length ? `incomplete: no price for ${bom.unpriced.join(", ")}`
    : bom.total_low === bom.total_high ? "every line quoted or listed"
      : `${percent(bom.estimated_share)} of the total is estimated; the band above adds each line's low and high`;
  return el("section", { id: "bom-section" }, el("h2", {}, "Bill of materials"),
    el("p", { class: "muted" }, `Priced from `, el("a", { href: `/catalog/price-books/${bom.price_book}/` }, bom.price_book),
      `, dated ${bom.price_date}${bom.price_book_owner ? ` (${bom.price_book_owner}'s own book)` : ""}.`),
    bom.stale ? el("p", { class: "notice", role: "note" }, bom.stale) : "",
    el("div", { class: "scroll" }, el("table", { id: "bom" },
      el("thead", {}, el("tr", {}, ["Part (slug)", "Quantity", "Unit price", "Extended (band)", "Price date", "Source"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, bom.lines.map((line) => el("tr", { "data-slug": line.slug, "data-confidence": line.confidence },
        el("th", { scope: "row" }, line.part, line.confidence === "estimate" ? [" ", el("span", { class: "badge badge-estimate" }, "estimate")] : "",
          el("br"), el("code", { class: "muted" }, line.slug)),
        el("td", { class: "num" }, num(line.quantity)),
        el("td", { class: "num" }, money(line.unit_price, bom.currency, true)),
        el("td", { class: "num" }, money(line.extended_price, bom.currency, true), band(line)),
        el("td", {}, line.price_date), el("td", { class: "source" }, source(line), " ", quote(line))))),
      el("tfoot", {}, el("tr", {}, el("th", { scope: "row" }, "total"), el("td"), el("td"),
        el("td", { class: "num" }, el("span", { id: "bom-total" }, bom.total === null ? "not priced" : money(bom.total, bom.currency, true)),
          bom.total === null || bom.total_low === bom.total_high ? ""
            : [el("br"), el("span", { class: "muted band", id: "bom-band" }, `${money(bom.total_low, bom.currency, true)} to ${money(bom.total_high, bom.currency, true)}`)]), el("td"),
        el("td", { class: "source" }, totalNote))))));
}

// Power by part; a plan without storage nodes or an optical scale-up network shows no rows for them.
function powerSection(result, plan) {
  const p = result.power, storage = p.storage_nodes_w > 0;
  return el("section", {}, el("h2", {}, "Power"), table("Power draw under GEMM load", [
    ["accelerator under GEMM", si(p.accelerator_gemm_w, "W")], ["accelerator idle", si(p.accelerator_idle_w, "W")],
    ["compute node, under training", si(p.node_w, "W"), "measured where published, else its parts at training load"],
    ["compute node, peak", si(p.node_peak_w, "W"), "its parts at nameplate, with fans and power-supply losses"],
    ["compute node, maximum", si(p.node_max_w, "W"), p.node_max_basis],
    ["switch", si(p.switch_w, "W")], storage ? ["storage node", si(p.storage_node_w, "W")] : null,
    ["compute nodes", si(p.compute_nodes_w, "W")], ["switches", si(p.switches_w, "W")],
    ["optics (switch modules and NIC-end parts)", si(p.optics_w, "W"), p.optics_basis],
    ...(p.scaleup_optics_w ? [["scale-up optics", si(p.scaleup_optics_w, "W"), `${num(result.fabric.scaleup_transceivers)} modules`]] : []),
    storage ? ["storage nodes", si(p.storage_nodes_w, "W")] : null,
    ["IT total", si(p.it_total_w, "W")], ["facility (with PUE)", si(p.facility_w, "W"), `PUE ${num(p.pue)}: ${p.pue_basis}`],
    ["FP16 TFLOPS per kW", num(p.fp16_tflops_per_kw)],
  ]), racksTable(result, plan));
}

function racksTable(result, plan) {
  const r = result.racks, c = result.cluster;
  const domain = plan.scaleup_link
    ? [`GPUs per scale-up domain (${plan.scaleup_link})`, num(c.scaleup_domain_gpus), `${num(c.scaleup_domains)} domains`]
    : ["scale-up domain", "none", "no scale-up link: GPUs in a node talk over PCIe through the host"];
  return table("Racks and scale-up domains", [
    ["racks", num(r.count), `${count(r.nodes_per_rack, "node")}, ${count(r.gpus_per_rack, "GPU")} each, ${r.cooling} cooled`],
    ["rack budget", si(r.budget_w, "W"), `nodes per rack: ${r.nodes_per_rack_basis}`],
    ["rack height used", `${num(r.units_used)} of ${num(r.units)} U`, "the nodes and the rack's other parts (switch trays, power shelves)"],
    r.network_count > 0 ? ["scale-up network racks", num(r.network_count), "beside the compute racks"] : null,
    ["fabric switch racks", num(r.fabric_count), `the fabric's switches, by height and power: ${num(r.total_count)} racks in all`],
    ["power per rack", si(r.power_w, "W"), "under training"],
    ["power per rack, maximum", si(r.max_power_w, "W"),
      `node maximum: ${result.power.node_max_basis}; ${r.within_power_limit ? "provisioned for this" : "over the site's rack power limit"}`],
    domain,
  ]);
}

// The step's parts as the result keys them (simcore.formulas.training.STEP_PARTS), with their labels.
const STEP_PARTS = {
  forward: "forward", backward: "backward", recomputation: "recomputation", optimizer: "optimizer",
  pipeline_bubble: "pipeline bubble", comm_sms: "SMs held by overlapped communication",
  host_launch: "the host launching kernels", stragglers: "waiting for the slowest GPU", tp_traffic: "tensor-parallel traffic", cp_traffic: "context-parallel traffic",
  pp_traffic: "pipeline traffic", ep_all_to_all: "expert all-to-all", activation_offload: "activation copies to and from the host",
  dp_exposed: "exposed data-parallel traffic",
  host_preprocessing: "host data preprocessing",
};

// What named kernels take of the compute parts (simcore.formulas.training.COMPUTE_DETAIL): parts of
// the forward, backward and recomputation above, not added again.
const COMPUTE_DETAIL = {
  sustained_clock: "the sustained clock below full (FLOP-bound work)", fp8_quantize: "FP8 and NVFP4 quantization",
  grouped_gemm: "grouped expert GEMMs", moe_permute: "MoE token shuffles", moe_router: "MoE router kernels",
};

// What the data-parallel traffic is made of (simcore.formulas.training.DP_DETAIL), before any overlap.
const DP_DETAIL = { param_gather: "parameter all-gathers (ZeRO-3 / FSDP)", grad_reduce: "gradient reduction",
  fsdp_calls: "ZeRO-3 / FSDP collective calls (ring latency and host time per call)" };

const PLACES = { "scale-up": "scale-up link (NVLink/HCCS)", PCIe: "PCIe through the host", network: "scale-out NICs", none: "not used" };

// Where a training step's time goes: the stacked bar of its parts, the rates, and where each
// parallel group's traffic runs.
// The time to train with the step time's band (a time that scales with the step shares it), or, where
// the run's interruptions are unknown, "unknown" with why and the failure-free time.
function timeToTrain(t, band, reliability) {
  if (t.time_to_train_days === undefined) return null;
  if (t.time_to_train_days === null) {
    const why = reliability?.ettr === null ? "its ETTR is unknown (the checkpoint's cost is unknown)" : "its interruptions are unknown";
    return ["time to train", "unknown", `${why}; failure-free ${num(t.time_to_train_ideal_days)} days`];
  }
  const days = t.time_to_train_days;
  return ["time to train", `${num(days)} days`, band
    ? `typically ${num(days / (1 + band.high_error))} to ${num(days / (1 + band.low_error))} days (the step time's band)`
    : `failure-free ${num(t.time_to_train_ideal_days)} days`];
}

// Why the host's part of a step is what it is: one CPU core a GPU launching each kernel from Python,
// at this node's CPU's measured rate (issue 70, item 13: Grace takes about twice an x86 server's time).
function hostNote(host) {
  if (!host) return "eager launches from one CPU core a GPU; CUDA graphs replay a layer with one";
  return `${host.cpu}: ${num(host.op_us)} µs a kernel launch, ${num(host.module_us)} µs a Transformer Engine module`
    + `${host.measured ? " (measured)" : " (an x86 server's; no measurement of this CPU)"}, one core a GPU launching `
    + "from Python: a layer whose kernels run faster waits on it; CUDA graphs replay a layer with one launch";
}

export function trainingTables(t, currency, stepBand = null, reliability = null, host = null) {
  if (!t.feasible) {
    return [table("Training the workload", [["feasible", "no", t.infeasible_reason],
      ["memory per GPU", `${num(t.memory.per_gpu_gib)} of ${num(t.memory.allocatable_gib)} GiB allocatable`, `mostly ${t.memory.dominant_term}`]])];
  }
  const fig = el("figure", { class: "chart-box wide", id: "step-breakdown" });
  stackedBar(fig, { parts: Object.entries(t.step_parts_s).map(([key, value]) => ({ name: STEP_PARTS[key] ?? key, value })),
    title: `Where the ${duration(t.step_time_s)} step goes`, format: duration, unit: "" });
  fig.prepend(el("figcaption", {}, `Where the step time goes (${duration(t.step_time_s)}; largest part: ${t.step_bound})`));
  const rows = [
    ["GPUs in the job", num(t.gpus)], ["step time", duration(t.step_time_s)], ["largest part", t.step_bound],
    ...Object.entries(t.step_parts_s).filter(([, s]) => s > 0).map(([key, s]) => [`  ${STEP_PARTS[key] ?? key}`, duration(s),
      key === "host_launch" ? hostNote(host) : null]),
    ...Object.entries(t.compute_detail_s ?? {}).filter(([, s]) => s > 0)
      .map(([key, s]) => [`  of the compute: ${COMPUTE_DETAIL[key] ?? key}`, duration(s), "inside the forward, backward and recomputation above"]),
    ...(t.dp_detail_s?.param_gather > 0 ? Object.entries(t.dp_detail_s).filter(([, s]) => s > 0) : [])
      .map(([key, s]) => [`  data-parallel traffic: ${DP_DETAIL[key] ?? key}`, duration(s), "before overlap; what shows is the exposed part above"]),
    ["MFU", percent(t.mfu)], ["HFU (with recomputation)", percent(t.hfu)],
    ["model TFLOPS per GPU", num(t.model_tflops_per_gpu)], ["hardware TFLOPS per GPU", num(t.hardware_tflops_per_gpu)],
    ["tokens per second", num(t.tokens_per_s)],
    t.params !== undefined ? ["parameters", si(t.params), `${si(t.active_params)} active per token`] : null,
    ["memory per GPU", `${num(t.memory.per_gpu_gib)} of ${num(t.memory.allocatable_gib)} GiB allocatable`, `mostly ${t.memory.dominant_term}`],
    timeToTrain(t, stepBand, reliability),
    t.time_to_train_days !== undefined && t.time_to_train_days !== null
      ? ["cost to train, owning: the job's share of capital", t.cost_to_train === null ? "unknown" : money(t.cost_to_train, currency),
        "the job's GPUs' share of the capital over its years, plus the run's energy"] : null,
    t.time_to_train_days !== undefined && t.time_to_train_days !== null
      ? ["cost to train, owning: buying the build", t.buy_and_run_cost === null ? "unknown" : money(t.buy_and_run_cost, currency),
        "the whole build bought, plus the run's energy (what a site plan ranks)"] : null,
    t.time_to_train_days !== undefined && t.time_to_train_days !== null
      ? ["cost to train, renting", t.rent_cost_to_train === null ? "no rental price" : money(t.rent_cost_to_train, currency),
        t.rent_cost_to_train === null ? "the price book has no rental price for this GPU"
          : `the same GPUs for the same days, ${t.rent_term} at ${money(t.rent_per_gpu_hour, currency)} a GPU-hour (the cheapest term covering them)`] : null,
  ];
  const out = [fig, table("Training the workload", rows)];
  if (t.stage_time_s) {
    out.push(table("Pipeline stages, per micro-batch", [["first stage (embedding)", duration(t.stage_time_s.first)],
      ["middle stage", duration(t.stage_time_s.middle)], ["last stage (output layer and loss)", duration(t.stage_time_s.last)]]));
  }
  if (t.placement) {
    out.push(table("Where each parallel group's traffic runs", Object.entries(t.placement)
      .map(([group, where]) => [group.toUpperCase(), PLACES[where] ?? where])));
  }
  return out;
}

function performanceSection(result, curves, bands, host) {
  const c = result.compute, t = result.training;
  const section = el("section", {}, el("h2", {}, "Performance"), table("Compute", [
    ["TF32 GEMM per GPU", c.gemm_tf32_tflops === null ? "–" : `${num(c.gemm_tf32_tflops)} TFLOPS`],
    ["FP16 GEMM per GPU", `${num(c.gemm_fp16_tflops)} TFLOPS`],
    c.gemm_fp8_tflops !== null ? ["FP8 GEMM per GPU", `${num(c.gemm_fp8_tflops)} TFLOPS`] : null,
    c.gemm_fp4_tflops != null ? ["NVFP4 GEMM per GPU", `${num(c.gemm_fp4_tflops)} TFLOPS`] : null,
    ["sustained clock (power cap)", percent(c.sustained_clock_factor)],
    ["cluster FP16 GEMM", `${num(c.cluster_fp16_pflops)} PFLOPS`],
  ]));
  if (t) section.append(...trainingTables(t, result.cost.currency, bands?.["training.step_time_s"], result.reliability, host));
  if (curves?.scaling) {
    const fig = el("figure", { class: "chart-box", id: "scaling-chart" });
    section.append(fig);
    lineChart(fig, { series: [{ name: "strong scaling (global batch fixed)", x: curves.scaling.gpus, y: curves.scaling.strong_efficiency },
      { name: "weak scaling (batch per GPU fixed)", x: curves.scaling.gpus, y: curves.scaling.weak_efficiency }],
      xLabel: "GPUs in the job", yLabel: "scaling efficiency (fraction of linear)", xLog: true, yFrom: [0, 1],
      title: "Scaling efficiency against GPU count" });
    fig.prepend(el("figcaption", {}, "Scaling efficiency against the job's GPU count"));
  }
  return section;
}

const LIBRARIES = { hfreduce: "HFReduce", nccl: "NCCL", hfreduce_nvlink: "HFReduce with NVLink pairs" };

// HFReduce reduces on the host for nodes whose GPUs cannot reduce among themselves (FF section VI: PCIe
// nodes, NVLink pairs); where every GPU of a scale-up domain reaches every other, NCCL alone is shown.
function collectivesSection(result, curves, plan) {
  const section = el("section", {}, el("h2", {}, "Allreduce bandwidth"));
  const allToAll = plan.nvlink_topology === "all-to-all";
  const shown = (key) => !(allToAll && key.startsWith("hfreduce"));
  const rows = Object.entries(LIBRARIES).filter(([key]) => result.collectives[key] && shown(key)).map(([key, label]) => {
    const r = result.collectives[key];
    return [label, `${num(r.algbw_gbyte_s)} GB/s`, `bound by ${r.bound}`];
  });
  section.append(table(`Across the cluster, ${si(result.collectives.message_bytes, "B")} messages`, rows));
  if (allToAll) section.append(el("p", { class: "muted" }, "HFReduce is not shown: it serves nodes whose GPUs have no " +
    "all-to-all NVLink (PCIe nodes, NVLink pairs); a workload may still choose it."));
  if (curves?.allreduce_vs_gpus) {
    const data = curves.allreduce_vs_gpus;
    const fig = el("figure", { class: "chart-box", id: "allreduce-chart" });
    section.append(fig);
    const switchAt = (data.nccl_algorithm || []).findIndex((algorithm, i) => i > 0 && algorithm !== data.nccl_algorithm[i - 1]);
    const markers = switchAt > 0 ? [{ x: data.gpus[switchAt], label: `NCCL: ${data.nccl_algorithm[switchAt - 1]} to ${data.nccl_algorithm[switchAt]}` }] : [];
    lineChart(fig, { series: Object.entries(LIBRARIES).filter(([k]) => data[k] && shown(k)).map(([k, name]) => ({ name, x: data.gpus, y: data[k] })),
      markers, xLabel: "GPUs", yLabel: "algorithm bandwidth (GB/s)", xLog: true, title: "Allreduce bandwidth against GPU count" });
    fig.prepend(el("figcaption", {}, `Allreduce algorithm bandwidth against GPU count (${si(data.message_bytes, "B")} messages)`));
  }
  return section;
}

const RESTART_PARTS = {
  detection: "detection", reschedule: "rescheduling", checkpoint_load: "checkpoint load",
  init: "rendezvous and set-up", warmup: "warm-up", checkpoint_lag: "write running behind (asynchronous)",
};

function ettrChart(id, caption, { series, markers, xLabel, title }) {
  const fig = el("figure", { class: "chart-box", id });
  lineChart(fig, { series, markers, xLabel, yLabel: "ETTR (fraction of wall-clock time)", xLog: true, title });
  fig.prepend(el("figcaption", {}, caption));
  return fig;
}

function jobCategories(r) {
  const job = r.job_by_category_per_day;
  if (!job) return null;
  const rows = (r.categories || []).filter((c) => c.interrupts_job && job[c.key] > 0)
    .sort((a, b) => job[b.key] - job[a.key])
    .map((c) => [c.label, num(job[c.key]), `${c.cause === "job" ? "job-caused" : "platform"}, ${c.detection}, per ${c.unit}`]);
  const excluded = (r.categories || []).filter((c) => c.interrupts_job && !(job[c.key] > 0)).map((c) => c.label);
  const section = el("div", {}, table("Categories that interrupt this job, per day", rows));
  if (excluded.length) {
    section.append(el("p", { class: "note", id: "excluded-categories" },
      `Not interrupting this job: ${excluded.join("; ")} (job-caused faults count only at the job's stated rate).`));
  }
  if ((r.excluded_categories || []).length) {
    const reasons = [...new Set(r.excluded_categories.map((c) => c.reason))];
    section.append(el("p", { class: "note", id: "inapplicable-categories" },
      `Not counted on this build: ${r.excluded_categories.map((c) => c.key).join(", ")} (${reasons.join("; ")}).`));
  }
  return section;
}

function reliabilitySection(result, curves) {
  const r = result.reliability;
  const parts = r.restart_parts_s || {};
  const section = el("section", {}, el("h2", {}, "Reliability"), table("Failures and checkpoints", [
    ["platform interruptions per day, whole cluster", num(r.platform_interruptions_per_day)],
    ["fabric share of interruptions", percent(r.fabric_interruption_share, 1), `${num(r.fabric_interruptions_per_day)} a day from links, NICs and switches`],
    ["repair hours per day", num(r.repair_hours_per_day), `fabric ${percent(r.fabric_repair_share, 1)}`],
    ["node availability", percent(r.node_availability, 3)],
    r.job_interruptions_per_day !== undefined ? ["job interruptions per day", num(r.job_interruptions_per_day),
      `of which job-caused ${num(r.job_caused_interruptions_per_day)}`] : null,
    r.checkpoint_mode !== undefined ? [`checkpoint stall (${r.checkpoint_mode}${r.checkpoint_peer_copy_s != null ? ", in memory" : ""})`,
      duration(r.checkpoint_time_s), [`${si(r.checkpoint_bytes, "B")}; storage write ${duration(r.checkpoint_write_time_s)}, bound by ${r.checkpoint_bound}`,
        r.checkpoint_peer_copy_s != null ? `copy to a peer's memory ${duration(r.checkpoint_peer_copy_s)}` : null].filter(Boolean).join("; ")] : null,
    r.restart_time_s !== undefined ? ["restart", duration(r.restart_time_s),
      `${r.restart_profile}; after a crash ${duration(r.restart_by_kind_s["platform-crash"])}, after a hang ${duration(r.restart_by_kind_s["platform-hang"])}`] : null,
    r.optimal_interval_s !== undefined ? ["optimal checkpoint interval",
      r.optimal_interval_s === null ? "unknown" : duration(r.optimal_interval_s),
      (r.optimal_interval_s === null && r.checkpoint_write_time_s === null
        ? `an asynchronous checkpoint's interval must outlast its write, whose time is unknown (${r.checkpoint_bound}); ` : "")
      + `Young ${duration(r.young_interval_s)}, Daly ${duration(r.daly_interval_s)}`] : null,
    r.link_flap_stall_fraction > 0 ? ["stalled by link flaps the transport rides out", percent(r.link_flap_stall_fraction, 3)] : null,
    r.ettr !== undefined ? ["ETTR at the plan's interval", percent(r.ettr, 2)] : null,
    r.spare_nodes !== undefined ? ["spare nodes (99%)", num(r.spare_nodes)] : null,
  ]));
  if (r.checkpoint_mode !== undefined && r.ettr === null && r.checkpoint_bound === "no storage plane: unknown") {
    section.append(el("p", { class: "note", id: "checkpoint-unknown" },
      "The checkpoint's cost is unknown: the plan has no storage plane, so its ETTR, restart and time to train are " +
      "unknown too. Add storage nodes, give the external storage system's sustained rate, or keep checkpoints in peer memory."));
  }
  if (r.restart_parts_s) {
    section.append(table(r.restart_given ? "Restart time in parts from the profile (the plan gives the whole restart instead)"
      : "Restart time in parts (rate-weighted over the kinds of failure)",
      Object.entries(RESTART_PARTS).map(([key, name]) => [name, duration(parts[key])])));
  }
  const job = jobCategories(r);
  if (job) section.append(job);
  const byCategory = Object.entries(r.by_category_per_day || {}).sort((a, b) => b[1] - a[1]);
  if (byCategory.length) {
    section.append(table("Events per day by category, whole cluster", byCategory.map(([k, v]) => [k, num(v)])));
  }
  if (curves?.ettr_vs_interval) {
    const e = curves.ettr_vs_interval;
    const markers = [{ x: e.optimal_interval_s, label: `optimum ${duration(e.optimal_interval_s)}: ETTR ${percent(e.ettr_at_optimum, 2)}` }];
    if (Math.abs(e.plan_interval_s / e.optimal_interval_s - 1) > 1e-6) markers.push({ x: e.plan_interval_s, label: `plan ${duration(e.plan_interval_s)}` });
    section.append(ettrChart("ettr-chart", "Effective training time ratio against checkpoint interval, optimum marked",
      { series: [{ name: "ETTR", x: e.interval_s, y: e.ettr }], markers, xLabel: "checkpoint interval (s)", title: "ETTR against checkpoint interval" }));
  }
  if (curves?.ettr_vs_restart) {
    const e = curves.ettr_vs_restart;
    section.append(ettrChart("ettr-restart-chart", "Effective training time ratio against restart time at the plan's interval, the plan's restart marked",
      { series: [{ name: "ETTR", x: e.restart_s, y: e.ettr }], markers: [{ x: e.plan_restart_s, label: `plan ${duration(e.plan_restart_s)}: ETTR ${percent(e.plan_ettr, 2)}` }],
        xLabel: "restart time (s)", title: "ETTR against restart time" }));
  }
  return section;
}

function topologySection(plan, result) {
  const f = result.fabric;
  const section = el("section", {}, el("h2", {}, "Topology"), table("Fabric", [
    ["switches", num(f.switches)], ["leaf", num(f.leaf_switches)], ["spine", num(f.spine_switches)],
    ["core", num(f.core_switches)], ["inter-zone", num(f.interzone_switches)], ["storage plane", num(f.storage_plane_switches)],
    ["endpoints", `${num(f.endpoints)} of ${num(f.capacity_endpoints)} ports`],
    ["optical transceivers", num(f.transceivers)], ["switch-to-switch links", num(f.switch_links)],
  ]));
  const fig = el("figure", { class: "chart-box wide", id: "topology" });
  section.append(fig);
  drawTopology(fig, plan, f, result.cluster);
  return section;
}

// The whole report for a plan's page.
export function report(container, plan, evaluation, bom) {
  const { result, curves } = evaluation;
  container.replaceChildren(
    headline(result, evaluation.bands), carriedNote(evaluation.carried, evaluation.overrides, result) ?? "",
    announcedNote(evaluation.announced) ?? "", trustNote(evaluation.trust) ?? "",
    bandsList(evaluation.bands) ?? "",
    overridesList(evaluation.overrides) ?? "",
    constraintsList(result) ?? "",
    el("div", { class: "grid2 report-pair" }, costSection(result, bom), powerSection(result, plan)),
    bomSection(bom, plan),
    el("div", { class: "grid2 report-pair" }, performanceSection(result, curves, evaluation.bands, evaluation.host),
      collectivesSection(result, curves, plan)),
    reliabilitySection(result, curves),
    topologySection(plan, result),
  );
}
