// Smaller pages: the comparison's charts and the API token manager.
import { api, el, errorLines } from "./api.js";
import { barChart } from "./charts.js";

// The metrics to chart are marked in the engine's output registry (simcore/outputs.py).
export function comparePage(comparison, charts) {
  for (const metric of comparison.metrics.filter((m) => m.chart)) {
    const key = metric.key;
    if (metric.values.every((v) => v === null || v === 0)) continue;  // nothing to draw: the table says "0"
    const unit = metric.unit === "currency" ? comparison.currency || "price" : metric.unit;
    const fig = el("figure", { class: "chart-box", "data-metric": key });
    charts.append(fig);
    barChart(fig, { groups: comparison.plans, series: [{ name: metric.label, values: metric.values.map((v) => (v === null ? NaN : v)) }],
      yLabel: `${metric.label} (${unit})`, title: `${metric.label} by plan` });
    fig.prepend(el("figcaption", {}, `${metric.label} (${unit})`));
  }
}

export function tokensPage({ list, form, created, errors }) {
  const refresh = async () => {
    const response = await api("/api/tokens/");
    if (!response.ok) { errors.textContent = errorLines(response.data).join(" "); return; }
    list.replaceChildren(...response.data.map((token) => el("tr", {},
      el("th", { scope: "row" }, token.name), el("td", {}, token.read_only ? "read-only" : "full access"),
      el("td", {}, new Date(token.created_at).toLocaleString()),
      el("td", {}, token.last_used_at ? new Date(token.last_used_at).toLocaleString() : "never"),
      el("td", {}, el("button", { type: "button", onclick: async () => {
        if (!confirm(`Revoke the token "${token.name}"? Scripts using it stop working.`)) return;
        await api(`/api/tokens/${token.id}/`, { method: "DELETE" });
        refresh();
      } }, "Revoke")))));
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = await api("/api/tokens/", { method: "POST",
      body: { name: form.elements.name.value.trim(), read_only: form.elements.read_only.checked } });
    if (!response.ok) { errors.textContent = errorLines(response.data).join(" "); return; }
    errors.textContent = "";
    form.reset();
    created.hidden = false;
    created.querySelector("code").textContent = response.data.key;
    refresh();
  });
  refresh();
}
