// A plan's measurements: upload a file (multipart to the API), mark one as an override or not, delete one.
// The tables of measured against predicted are rendered by the server; each change reloads the page.
import { api, el, errorLines } from "./api.js";
import { lineChart } from "./charts.js";

// Each nccl-tests measurement's bus bandwidth against message size, measured beside the engine's.
export function measurementCharts(root) {
  for (const figure of root?.querySelectorAll("figure[data-chart]") ?? []) {
    const chart = JSON.parse(figure.dataset.chart);
    lineChart(figure, {
      series: [{ name: "measured", x: chart.x, y: chart.measured }, { name: "engine", x: chart.x, y: chart.predicted }],
      xLabel: "message size (bytes)", yLabel: "bus bandwidth (GB/s)", xLog: true, title: chart.title,
    });
  }
}

// An API error's lines, shown as an alert in ``box``.
const alertIn = (box) => (data) => box.replaceChildren(
  el("div", { class: "error", role: "alert" }, el("ul", {}, errorLines(data).map((line) => el("li", {}, line)))));

export function measurements(section) {
  if (!section) return;
  measurementCharts(section);
  const form = section.querySelector("#measurement-form");
  const show = alertIn(section.querySelector("#measurement-errors"));
  form?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = new FormData(form);
    for (const name of ["collective", "workload", "first_step", "last_step"]) if (!body.get(name)) body.delete(name);
    body.set("use_as_override", form.use_as_override.checked ? "true" : "false");
    let response = await api("/api/measurements/", { method: "POST", body });
    // A large trace is read by a task (202): its read is polled until it has stored the measurement.
    const status = section.querySelector("#measurement-errors");
    while (response.ok && ["queued", "running"].includes(response.data?.status)) {
      status.replaceChildren(el("p", { role: "status" }, `Reading ${response.data.filename} on a worker…`));
      await new Promise((resolve) => { setTimeout(resolve, 1000); });
      response = await api(`/api/measurements/reads/${response.data.id}/`);
    }
    if (response.ok && response.data?.status === "failed") {
      show(response.data.errors ? { errors: response.data.errors } : { detail: response.data.error });
    } else if (response.ok) location.reload(); else show(response.data);
  });
  section.addEventListener("click", async (event) => {
    const uncarry = event.target.closest("button[data-uncarry]");
    if (uncarry) {
      const path = `/api/measurements/${uncarry.dataset.uncarry}/carry/?plan=${encodeURIComponent(uncarry.dataset.plan)}`;
      const response = await api(path, { method: "DELETE" });
      if (response.ok) location.reload(); else show(response.data);
      return;
    }
    const button = event.target.closest("button[data-measurement]");
    if (!button) return;
    if (button.dataset.action === "carry") {
      const target = section.querySelector(`select[data-carry-plan="${button.dataset.measurement}"]`).value;
      const response = await api(`/api/measurements/${button.dataset.measurement}/carry/`,
        { method: "POST", body: { plan: target } });
      if (response.ok) location.assign(`/plans/${target}/`); else show(response.data);
      return;
    }
    const path = `/api/measurements/${button.dataset.measurement}/`;
    const action = button.dataset.action;
    const response = action === "delete" ? await api(path, { method: "DELETE" })
      : action === "run" ? await api("/api/runs/", { method: "POST", body: { trace: Number(button.dataset.measurement) } })
      : await api(path, { method: "PATCH", body: { use_as_override: action === "override" } });
    if (response.ok) location.reload(); else show(response.data);
  });
}

// Your runs on a plan's page: enter a measured step time or the Megatron-LM log that printed it (JSON to the
// API), delete one; each change reloads.
export function runs(section) {
  if (!section) return;
  const form = section.querySelector("#run-form");
  const show = alertIn(section.querySelector("#run-errors"));
  form?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const { megatron_log_file: log, ...body } = Object.fromEntries(new FormData(form));
    if (log?.size) body.megatron_log = await log.text();
    if (body.measured_s === "") delete body.measured_s; else body.measured_s = Number(body.measured_s);
    for (const name of ["measured_on", "source"]) if (!body[name]) delete body[name];
    const response = await api("/api/runs/", { method: "POST", body });
    if (response.ok) location.reload(); else show(response.data);
  });
  section.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-run]");
    if (!button) return;
    const response = await api(`/api/runs/${button.dataset.run}/`, { method: "DELETE" });
    if (response.ok) location.reload(); else show(response.data);
  });
}
