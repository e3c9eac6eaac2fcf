// Smaller pages: the comparison's charts, the API token manager and a price book's quote and copy forms.
import { api, el, errorLines } from "./api.js";
import { barChart } from "./charts.js";
import { SI } from "./format.js";

// The metrics to chart are marked in the engine's output registry (simcore/outputs.py).
export function comparePage(comparison, charts) {
  for (const metric of comparison.metrics.filter((m) => m.chart)) {
    const key = metric.key;
    if (metric.values.every((v) => v === null || v === 0)) continue;  // nothing to draw: the table says "0"
    // Watts in the prefix their largest value reads in (MW, kW), never raw (issue 70, item 13).
    const largest = Math.max(...metric.values.filter(Number.isFinite).map(Math.abs));
    const [scaleBy, prefix] = metric.unit === "W" ? (SI.find(([s]) => largest >= s) ?? [1, ""]) : [1, ""];
    const unit = metric.unit === "currency" ? comparison.currency || "price" : `${prefix}${metric.unit}`;
    const fig = el("figure", { class: "chart-box", "data-metric": key });
    charts.append(fig);
    barChart(fig, { groups: comparison.plans,
      series: [{ name: metric.label, values: metric.values.map((v) => (v === null ? NaN : v / scaleBy)) }],
      yLabel: `${metric.label} (${unit})`, title: `${metric.label} by plan` });
    const missing = comparison.plans.filter((_, i) => metric.values[i] === null);  // never dropped silently
    fig.prepend(el("figcaption", {}, `${metric.label} (${unit})`, missing.length
      ? el("span", { class: "muted missing" }, ` · not drawn, no figure: ${missing.map((slug) => (comparison.infeasible[slug]
        ? `${slug} (${comparison.infeasible[slug].join("; ")})` : `${slug} (unknown for this build: its report says why)`)).join(", ")}`)
      : ""));
  }
}

export function tokensPage({ list, form, created, errors }) {
  const refresh = async () => {
    const response = await api("/api/tokens/?page_size=500");
    if (!response.ok) { errors.textContent = errorLines(response.data).join(" "); return; }
    list.replaceChildren(...response.data.results.map((token) => el("tr", {},
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

// A price book's page: save a quote to your own book (the API answers with the book, then the page
// shows it), or copy a shared book as your own and go on to quote in the copy.
export function priceBookPage({ quoteForm, copyForm }) {
  const fail = (form, errorsBox, data) => {
    const lines = [];
    form.querySelectorAll(".field-error").forEach((slot) => { slot.hidden = true; slot.textContent = ""; });
    for (const [field, reasons] of Object.entries(data?.errors ?? {})) {
      const slot = document.getElementById(`e-${field}`);
      const text = [].concat(reasons).join(" ");
      if (slot) { slot.textContent = text; slot.hidden = false; } else lines.push(`${field}: ${text}`);
    }
    if (!data?.errors) lines.push(...errorLines(data));
    errorsBox.textContent = lines.join(" ");
    errorsBox.hidden = !lines.length;
  };
  quoteForm?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const fields = quoteForm.elements;
    const [kind, slug] = fields.part.value.split(":");
    const plan = quoteForm.dataset.plan;  // a plan of yours: the quote goes to your own book, which prices it
    const band = fields.low_price.value || fields.high_price.value
      ? { low_price: fields.low_price.value || null, high_price: fields.high_price.value || null } : {};
    const url = plan ? `/api/plans/${plan}/quotes/` : `/api/catalog/price-books/${quoteForm.dataset.book}/items/`;
    const response = await api(url, { method: "POST", body: {
      part_kind: kind, part_slug: slug, term: fields.term.value, provider: fields.provider.value.trim(),
      unit_price: fields.unit_price.value, ...band,
      basis: fields.basis.value.trim(), confidence: fields.confidence.value, price_date: fields.price_date.value || null,
      source_url: fields.source_url.value.trim() } });
    if (!response.ok) { fail(quoteForm, document.getElementById("quote-errors"), response.data); return; }
    if (plan) location.assign(`/plans/${plan}/#bom`); else location.reload();
  });
  copyForm?.addEventListener("submit", async (event) => {
    event.preventDefault();
    const fields = copyForm.elements;
    const plan = fields.plan?.checked ? fields.plan.value : undefined;
    const response = await api(`/api/catalog/price-books/${copyForm.dataset.book}/copy/`, { method: "POST",
      body: { slug: fields.slug.value.trim(), ...(plan ? { plan } : {}) } });
    if (!response.ok) { fail(copyForm, document.getElementById("copy-errors"), response.data); return; }
    const next = new URLSearchParams(location.search);
    if (copyForm.dataset.part) next.set("part", copyForm.dataset.part);
    location.assign(`/catalog/price-books/${response.data.slug}/?${next}#quote`);
  });
}
