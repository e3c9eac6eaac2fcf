// The plan builder: every edit is checked and evaluated unsaved (POST /api/plans/preview/), and
// each field's errors appear beside it; saving creates (POST) or replaces (PUT) the plan.
import { api } from "./api.js";
import { constraintsList, headline } from "./evaluation.js";
import { collect, fill, livePreview, namedControls, showErrors, showPreview } from "./form.js";

const NOT_PREVIEWED = new Set(["name", "slug", "description", "visibility", "workload"]);

export function builder({ form, editing, initial, status, body, formErrors }) {
  const controls = namedControls(form);
  fill(controls, initial);
  const plan = (skip) => {
    const data = collect(controls, skip);
    if (data.node_count === null) delete data.node_count;
    return data;
  };

  livePreview(form, async (current, retry) => {
    const data = plan(NOT_PREVIEWED);
    const workload = form.elements.workload.value || null;
    status.textContent = "Evaluating…";
    const response = await api("/api/plans/preview/", { method: "POST", body: { ...data, workload } });
    if (!current()) return;  // a newer edit has been sent
    showPreview(response, { form, controls, formErrors, status, body, retry,
      render: (result) => [headline(result), constraintsList(result) ?? ""],
      done: (result) => `${result.cluster.gpus.toLocaleString("en-US")} GPUs evaluated.`,
      failed: (data) => (data?.feasible === false ? "This build cannot run." : "The plan has errors.") });
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = editing
      ? await api(`/api/plans/${editing}/`, { method: "PUT", body: plan(new Set(["workload"])) })
      : await api("/api/plans/", { method: "POST", body: plan(new Set(["workload"])) });
    if (response.ok) location.assign(`/plans/${response.data.slug}/`);
    else showErrors(form, controls, formErrors, response.data);
  });
}
