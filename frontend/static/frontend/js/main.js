// The one script every page loads. It starts the module of the page named by <body data-page>, with
// the page's data from data attributes and JSON script elements, so that no page carries inline
// script: the Content-Security-Policy allows scripts from this site's static files only.
const byId = (id) => document.getElementById(id);
const jsonOf = (id) => JSON.parse(byId(id).textContent);
const { page, objectId, editing, version } = document.body.dataset;
const editorParts = (formId, initialId) => ({
  form: byId(formId), editing: editing || null, etag: version ? `"${version}"` : null, initial: jsonOf(initialId),
  status: byId("preview-status"), body: byId("preview-body"), formErrors: byId("form-errors"),
});

const pages = {
  compare: async () => {
    if (byId("comparison-data")) (await import("./pages.js")).comparePage(jsonOf("comparison-data"), byId("compare-charts"));
  },
  "plan-builder": async () => (await import("./builder.js")).builder(editorParts("plan-form", "initial-plan")),
  "plan-detail": async () => {
    const measured = await import("./measurements.js");
    measured.measurements(byId("measurements"));
    measured.runs(byId("runs"));
    await (await import("./plan.js")).planPage({
      plan: jsonOf("plan-data"), form: byId("plan-options"), output: byId("plan-report"), status: byId("plan-status"),
      compareWorkload: byId("compare-workload"),
    });
  },
  "workload-editor": async () => (await import("./workload_editor.js")).workloadEditor(
    editorParts("workload-form", "initial-workload")),
  "catalog-entry": async () => (await import("./measurements.js")).measurements(byId("measurements")),
  "price-book": async () => (await import("./pages.js")).priceBookPage({
    quoteForm: byId("quote-form"), copyForm: byId("copy-form") }),
  validation: async () => (await import("./measurements.js")).measurementCharts(byId("measurements")),
  tokens: async () => (await import("./pages.js")).tokensPage({
    list: byId("token-list"), form: byId("token-form"), created: byId("token-created"), errors: byId("token-errors"),
  }),
  sweeps: async () => (await import("./sweep.js")).sweepForm(byId("sweep-form"), byId("sweep-errors")),
  "site-new": async () => (await import("./sweep.js")).siteForm(byId("site-form"), byId("site-errors")),
  "sweep-detail": async () => (await import("./sweep.js")).sweepPage(Number(objectId)),
  twins: async () => (await import("./twin.js")).twinForm(byId("twin-form"), byId("twin-errors")),
  "twin-detail": async () => (await import("./twin.js")).twinPage(Number(objectId)),
};

if (pages[page]) pages[page]();
