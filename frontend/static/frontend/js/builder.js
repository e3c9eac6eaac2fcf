// The plan builder: every edit is checked and evaluated unsaved (POST /api/plans/preview/), and
// each field's errors appear beside it; saving creates (POST) or replaces (PUT) the plan.
import { api, el } from "./api.js";
import { constraintsList, headline } from "./evaluation.js";
import { collect, fill, livePreview, namedControls, showErrors } from "./form.js";

const NOT_PREVIEWED = new Set(["name", "slug", "description", "visibility", "workload"]);

export function builder({ form, editing, initial, status, body, formErrors }) {
  const controls = namedControls(form);
  fill(controls, initial);
  const plan = () => {
    const data = collect(controls, new Set(["workload"]));
    if (data.node_count === null) delete data.node_count;
    return data;
  };

  livePreview(form, async (current, retry) => {
    const data = collect(controls, NOT_PREVIEWED);
    if (data.node_count === null) delete data.node_count;
    const workload = form.elements.workload.value || null;
    status.textContent = "Evaluating…";
    const response = await api("/api/plans/preview/", { method: "POST", body: { ...data, workload } });
    if (!current()) return;  // a newer edit has been sent
    if (response.ok) {
      showErrors(form, controls, formErrors, null);
      body.replaceChildren(headline(response.data.result), constraintsList(response.data.result) ?? "");
      status.textContent = `${response.data.result.cluster.gpus.toLocaleString("en-US")} GPUs evaluated.`;
    } else if (response.status === 429) {
      status.textContent = "Too many evaluations in a short time; pausing briefly.";
      setTimeout(retry, 2000);
    } else {
      showErrors(form, controls, formErrors, response.data);
      body.replaceChildren(el("p", { class: "muted" }, "Fix the highlighted fields to see the evaluation."));
      status.textContent = response.data?.feasible === false ? "This build cannot run." : "The plan has errors.";
    }
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = editing
      ? await api(`/api/plans/${editing}/`, { method: "PUT", body: plan() })
      : await api("/api/plans/", { method: "POST", body: plan() });
    if (response.ok) location.assign(`/plans/${response.data.slug}/`);
    else showErrors(form, controls, formErrors, response.data);
  });
}
