// The plan builder: every edit is checked and evaluated unsaved (POST /api/plans/preview/), and
// each field's errors appear beside it; saving creates (POST) or replaces (PUT) the plan.
import { api, el, errorLines } from "./api.js";
import { constraintsList, headline } from "./evaluation.js";

const NOT_PREVIEWED = new Set(["name", "slug", "description", "visibility"]);

export function builder({ form, editing, initial, status, body, formErrors }) {
  const controls = [...form.elements].filter((c) => c.name);
  for (const control of controls) {
    const value = initial[control.name];
    if (value !== undefined && value !== null) control.value = String(value);
  }

  const collect = () => {
    const plan = {};
    for (const control of controls) {
      if (control.name === "workload") continue;
      const raw = control.value.trim();
      if (control.type === "number") plan[control.name] = raw === "" ? null : Number(raw);
      else if (control.tagName === "SELECT") plan[control.name] = raw === "" ? null : raw;
      else plan[control.name] = raw;
    }
    if (plan.node_count === null) delete plan.node_count;
    return plan;
  };

  const showErrors = (data) => {
    const unplaced = [];
    for (const control of controls) control.removeAttribute("aria-invalid");
    form.querySelectorAll(".field-error").forEach((p) => { p.hidden = true; p.textContent = ""; });
    if (data && typeof data === "object" && !data.reasons && !data.detail) {
      for (const [field, reasons] of Object.entries(data)) {
        const slot = document.getElementById(`e-${field}`);
        const text = (Array.isArray(reasons) ? reasons : [reasons]).join(" ");
        if (slot) {
          slot.textContent = text; slot.hidden = false;
          form.elements[field]?.setAttribute("aria-invalid", "true");
        } else unplaced.push(`${field}: ${text}`);
      }
    } else if (data) unplaced.push(...errorLines(data));
    formErrors.hidden = !unplaced.length;
    formErrors.textContent = unplaced.join(" ");
  };

  let sequence = 0, timer = null;
  const preview = async () => {
    const mine = ++sequence;
    const plan = collect();
    for (const key of NOT_PREVIEWED) delete plan[key];
    const workload = form.elements.workload.value || null;
    status.textContent = "Evaluating…";
    const response = await api("/api/plans/preview/", { method: "POST", body: { ...plan, workload } });
    if (mine !== sequence) return;  // a newer edit has been sent
    if (response.ok) {
      showErrors(null);
      body.replaceChildren(headline(response.data.result), constraintsList(response.data.result) ?? "");
      status.textContent = `${response.data.result.cluster.gpus.toLocaleString("en-US")} GPUs evaluated.`;
    } else if (response.status === 429) {
      status.textContent = "Too many evaluations in a short time; pausing briefly.";
      setTimeout(schedule, 2000);
    } else {
      showErrors(response.data);
      body.replaceChildren(el("p", { class: "muted" }, "Fix the highlighted fields to see the evaluation."));
      status.textContent = response.data?.feasible === false ? "This build cannot run." : "The plan has errors.";
    }
  };
  const schedule = () => { clearTimeout(timer); timer = setTimeout(preview, 350); };
  form.addEventListener("input", schedule);
  form.addEventListener("change", schedule);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const plan = collect();
    const response = editing
      ? await api(`/api/plans/${editing}/`, { method: "PUT", body: plan })
      : await api("/api/plans/", { method: "POST", body: plan });
    if (response.ok) location.assign(`/plans/${response.data.slug}/`);
    else showErrors(response.data);
  });
  preview();
}
