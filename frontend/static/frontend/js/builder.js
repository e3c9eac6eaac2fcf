// The plan builder: every edit is checked and evaluated unsaved (POST /api/plans/preview/), and
// each field's errors appear beside it; saving creates (POST) or replaces (PUT) the plan.
import { api } from "./api.js";
import { constraintsList, headline } from "./evaluation.js";
import { collect, fill, livePreview, namedControls, saveFailed, showPreview } from "./form.js";

const NOT_PREVIEWED = new Set(["name", "slug", "description", "visibility", "workload"]);

const MATCHED = ["switch", "endpoint_cable", "transceiver", "fiber"];

// The parts that fit the node type (and switch) first, each other one marked with why it does not
// (GET /api/catalog/matching-parts/, the plan's own rule).
async function offerMatchingParts(form) {
  const nodeType = form.elements.node_type.value;
  if (!nodeType) return;
  const query = new URLSearchParams({ node_type: nodeType });
  if (form.elements.switch.value) query.set("switch", form.elements.switch.value);
  const response = await api(`/api/catalog/matching-parts/?${query}`);
  if (!response.ok) return;
  for (const field of MATCHED) {
    const select = form.elements[field];
    const options = new Map([...select.options].map((option) => [option.value, option]));
    for (const part of response.data[field]) {
      const option = options.get(part.slug);
      if (!option) continue;
      option.dataset.fits = String(part.fits);
      option.textContent = part.fits ? part.name + ` (${part.slug})` : `${part.name} (${part.slug}): does not fit`;
      option.title = part.reason;
      select.append(option);  // in the answer's order: matching parts first
    }
  }
}

export function builder({ form, editing, etag, initial, status, body, formErrors }) {
  const controls = namedControls(form);
  fill(controls, initial);
  offerMatchingParts(form);
  for (const name of ["node_type", "switch"]) form.elements[name].addEventListener("change", () => offerMatchingParts(form));
  const plan = (skip) => {
    const data = collect(controls, skip);
    if (data.node_count === null) delete data.node_count;
    return data;
  };

  livePreview(form, async (current, retry) => {
    const data = plan(NOT_PREVIEWED);
    if (!data.node_type || data.node_count === undefined) {  // a blank builder: nothing to check yet
      status.textContent = "Choose a compute node type and a node count to see the build evaluated.";
      body.replaceChildren();
      return;
    }
    const workload = form.elements.workload.value || null;
    status.textContent = "Evaluating…";
    const response = await api("/api/plans/preview/", { method: "POST", body: { ...data, workload } });
    if (!current()) return;  // a newer edit has been sent
    showPreview(response, { form, controls, formErrors, status, body, retry,
      render: (result) => [headline(result), constraintsList(result) ?? ""],
      done: (result) => `${result.cluster.gpus.toLocaleString("en-US")} GPUs evaluated.`,
      failed: (data) => (data?.feasible === false ? `This build cannot run: ${(data.reasons ?? []).join("; ")}`
        : "The plan has errors.") });
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = editing
      ? await api(`/api/plans/${editing}/`, { method: "PUT", body: plan(new Set(["workload"])), ifMatch: etag })
      : await api("/api/plans/", { method: "POST", body: plan(new Set(["workload"])) });
    if (response.ok) location.assign(`/plans/${response.data.slug}/`);
    else saveFailed(form, controls, formErrors, response.data);
  });
}
