// The workload editor: every edit is checked and evaluated unsaved on the chosen plan
// (POST /api/workloads/preview/): field errors beside their fields, and where the step time
// goes; saving creates (POST) or replaces (PUT) the workload.
import { api } from "./api.js";
import { bandsList, constraintsList, headline, trainingTables, trustNote } from "./evaluation.js";
import { collect, fill, livePreview, namedControls, saveFailed, showPreview } from "./form.js";

const NOT_PREVIEWED = new Set(["name", "slug", "description", "visibility", "plan"]);

export function workloadEditor({ form, editing, etag, initial, status, body, formErrors }) {
  const controls = namedControls(form);
  fill(controls, initial);

  livePreview(form, async (current, retry) => {
    const data = collect(controls, NOT_PREVIEWED);
    status.textContent = "Evaluating…";
    const response = await api("/api/workloads/preview/", { method: "POST", body: { ...data, plan: form.elements.plan.value } });
    if (!current()) return;  // a newer edit has been sent
    showPreview(response, { form, controls, formErrors, status, body, retry,
      render: (result, evaluation) => [headline(result, evaluation.bands), trustNote(evaluation.trust) ?? "", bandsList(evaluation.bands) ?? "", constraintsList(result) ?? "",
        ...trainingTables(result.training, result.cost.currency)],
      done: () => `Evaluated on ${form.elements.plan.selectedOptions[0]?.textContent ?? "the plan"}.`,
      failed: (data) => (data?.feasible === false ? "This layout cannot run." : "The workload has errors.") });
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = collect(controls, new Set(["plan"]));
    const response = editing
      ? await api(`/api/workloads/${editing}/`, { method: "PUT", body: data, ifMatch: etag })
      : await api("/api/workloads/", { method: "POST", body: data });
    if (response.ok) location.assign(`/workloads/?saved=${encodeURIComponent(response.data.slug)}`);
    else saveFailed(form, controls, formErrors, response.data);
  });
}
