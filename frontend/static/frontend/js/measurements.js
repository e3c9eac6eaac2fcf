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

export function measurements(section) {
  if (!section) return;
  measurementCharts(section);
  const form = section.querySelector("#measurement-form");
  const errors = section.querySelector("#measurement-errors");
  const show = (data) => errors.replaceChildren(
    el("div", { class: "error", role: "alert" }, el("ul", {}, errorLines(data).map((line) => el("li", {}, line)))));
  form?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = new FormData(form);
    for (const name of ["collective", "workload"]) if (!body.get(name)) body.delete(name);
    body.set("use_as_override", form.use_as_override.checked ? "true" : "false");
    const response = await api("/api/measurements/", { method: "POST", body });
    if (response.ok) location.reload(); else show(response.data);
  });
  section.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-measurement]");
    if (!button) return;
    const path = `/api/measurements/${button.dataset.measurement}/`;
    const response = button.dataset.action === "delete"
      ? await api(path, { method: "DELETE" })
      : await api(path, { method: "PATCH", body: { use_as_override: button.dataset.action === "override" } });
    if (response.ok) location.reload(); else show(response.data);
  });
}
