// A plan's page: evaluate it (optionally with a workload), then draw the report.
import { api, el, errorLines } from "./api.js";
import { report } from "./evaluation.js";

export async function planPage({ plan, form, output, status, compareWorkload }) {
  const run = async () => {
    const workload = form.workload.value || null;
    compareWorkload.value = workload ?? "";  // "Compare with" takes the same workload
    const runWorkload = document.querySelector("#run-form select[name=workload]");
    if (runWorkload && workload) runWorkload.value = workload;  // and so does a run entered here
    status.textContent = "Evaluating…";
    // One engine request at a time (the evaluation, then the bill): a user has HEAVY_REQUESTS_PER_USER
    // of them, and a download asked for meanwhile needs one.
    let evaluation = await api(`/api/plans/${plan.slug}/evaluate/`, { method: "POST", body: { workload } });
    const bom = await api(`/api/plans/${plan.slug}/bom/`);
    let jobReasons = null;  // a job that cannot run here: the build's own report, the job's reasons in place of its figures
    if (!evaluation.ok && workload && evaluation.data?.feasible === false) {
      const alone = await api(`/api/plans/${plan.slug}/evaluate/`, { method: "POST", body: { workload: null } });
      if (alone.ok) [evaluation, jobReasons] = [alone, errorLines(evaluation.data)];
    }
    if (!evaluation.ok) {
      status.textContent = "";
      output.replaceChildren(el("div", { class: "error", role: "alert" }, el("p", {}, "This plan cannot be evaluated:"),
        el("ul", {}, errorLines(evaluation.data).map((line) => el("li", {}, line)))));
      return;
    }
    report(output, plan, evaluation.data, bom.ok ? bom.data : null);
    if (jobReasons) {
      output.prepend(el("div", { class: "warn", role: "alert", id: "job-infeasible" },
        el("p", {}, `The workload ${workload} cannot run on this build, so the report has no training figures; `
          + "the build's bill, power, racks and reliability follow:"),
        el("ul", {}, jobReasons.map((line) => el("li", {}, line)))));
    }
    status.textContent = `Evaluated with engine ${evaluation.data.engine_version}${workload ? ` and workload ${workload}` : ""}`
      + `${jobReasons ? " (which cannot run here)" : ""}.`;
    const url = new URL(location.href);
    if (workload) url.searchParams.set("workload", workload); else url.searchParams.delete("workload");
    history.replaceState(null, "", url);
    const around = document.getElementById("sweep-around");  // a sweep around the plan keeps its workload
    if (around) {
      const target = new URL(around.href);
      if (workload) target.searchParams.set("workload", workload); else target.searchParams.delete("workload");
      around.href = target.toString();
    }
  };
  form.addEventListener("change", run);
  form.addEventListener("submit", (event) => { event.preventDefault(); run(); });
  const chosen = new URL(location.href).searchParams.get("workload");
  if (chosen) form.workload.value = chosen;
  await run();
}
