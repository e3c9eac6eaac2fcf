// Forms that mirror an API object: fill from it, collect it back (numbers as numbers, empty as
// null, checkboxes as true/false) and show the API's 400 field errors beside their fields.
import { el, errorLines, fieldLines } from "./api.js";

export function namedControls(form) {
  return [...form.elements].filter((c) => c.name);
}

export function fill(controls, initial) {
  for (const control of controls) {
    const value = initial[control.name];
    if (value === undefined || value === null) continue;
    if (control.type === "checkbox") control.checked = Boolean(value);
    else if (control.dataset.kind === "json") control.value = Object.keys(value).length ? JSON.stringify(value) : "";
    else control.value = String(value);
  }
}

export function collect(controls, skip = new Set()) {
  const data = {};
  for (const control of controls) {
    if (skip.has(control.name)) continue;
    const raw = control.type === "checkbox" ? null : control.value.trim();
    if (control.type === "checkbox") data[control.name] = control.checked;
    else if (control.dataset.kind === "json") data[control.name] = raw === "" ? {} : parseJson(raw);
    else if (control.type === "number") data[control.name] = raw === "" ? null : Number(raw);
    else if (control.tagName === "SELECT") data[control.name] = raw === "" ? null : raw;
    else data[control.name] = raw;
  }
  return data;
}

// Invalid JSON goes to the API as the text it is, which answers with the field's error.
function parseJson(text) {
  try { return JSON.parse(text); } catch { return text; }
}

// Errors a save answered stay beside their fields (the live preview, which knows nothing of slugs,
// would otherwise clear them) until that field is edited.
function withSaveErrors(form, data) {
  const kept = form.saveErrors ?? {};
  if (!Object.keys(kept).length) return data;
  if (data && typeof data === "object" && data.errors && !data.reasons) return { ...data, errors: { ...kept, ...data.errors } };
  return data && !data.errors ? data : { errors: kept };
}

// A save the API refused: its field errors beside their fields, kept until edited, and the first
// of them scrolled to and focused, so the user sees why wherever they were on the page.
export function saveFailed(form, controls, formErrors, data) {
  form.saveErrors = { ...(data?.errors ?? {}) };
  showErrors(form, controls, formErrors, data);
  for (const field of Object.keys(form.saveErrors)) {
    form.elements[field]?.addEventListener("input", () => { delete form.saveErrors[field]; }, { once: true });
  }
  const first = controls.find((control) => control.getAttribute("aria-invalid") === "true") ?? formErrors;
  first.scrollIntoView({ block: "center" });
  if (first.focus) first.focus();
}

export function showErrors(form, controls, formErrors, shown) {
  const data = withSaveErrors(form, shown);
  const unplaced = [];
  for (const control of controls) control.removeAttribute("aria-invalid");
  form.querySelectorAll(".field-error").forEach((p) => { p.hidden = true; p.textContent = ""; });
  if (data && typeof data === "object" && data.errors && !data.reasons) {
    for (const [field, reasons] of Object.entries(data.errors)) {
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
}

// A refused request's field errors, all at once, each beside the control its path names (the last
// part of a nested path: facility.power_mw is the control power_mw), marked invalid and led by its
// label; what names no control (or is no field error) stays in the summary. The first is focused.
export function placeErrors(form, summary, data) {
  form.querySelectorAll(".placed-error").forEach((p) => p.remove());
  form.querySelectorAll("[aria-invalid]").forEach((c) => c.removeAttribute("aria-invalid"));
  const lines = data?.errors ? fieldLines(data.errors, "") : errorLines(data);
  const unplaced = [];
  let first = null;
  for (const line of lines) {
    const [path, ...rest] = line.split(": ");
    const control = data?.errors ? form.elements[path.split(".").at(-1)] : null;
    const target = control instanceof RadioNodeList ? control[0] : control;
    if (!target || !rest.length) { unplaced.push(line); continue; }
    const label = form.querySelector(`label[for="${target.id}"]`)?.textContent.trim() ?? path;
    target.setAttribute("aria-invalid", "true");
    const slot = el("p", { class: "field-error placed-error", role: "alert" }, `${label}: ${rest.join(": ")}`);
    (target.closest(".field") ?? target).after(slot);
    first ??= target;
  }
  summary.hidden = false;
  summary.replaceChildren(el("p", {}, unplaced.length ? "Not submitted:" : "Not submitted: fix the marked fields."),
    ...(unplaced.length ? [el("ul", {}, unplaced.map((line) => el("li", {}, line)))] : []));
  (first ?? summary).scrollIntoView({ block: "center" });
  first?.focus();
}

// Evaluate the form unsaved after each edit (debounced; only the newest answer is shown).
export function livePreview(form, evaluate) {
  let sequence = 0, timer = null;
  const run = async () => {
    const mine = ++sequence;
    await evaluate(() => mine === sequence, schedule);
  };
  const schedule = () => { clearTimeout(timer); timer = setTimeout(run, 350); };
  form.addEventListener("input", schedule);
  form.addEventListener("change", schedule);
  run();
}

// Show a live evaluation's answer: the rendered result, a pause on 429, or the field errors.
export function showPreview(response, { form, controls, formErrors, status, body, retry, render, done, failed }) {
  if (response.ok) {
    showErrors(form, controls, formErrors, null);
    body.replaceChildren(...render(response.data.result, response.data));
    status.textContent = done(response.data.result);
  } else if (response.status === 429) {
    status.textContent = "Too many evaluations in a short time; pausing briefly.";
    setTimeout(retry, 2000);
  } else {
    showErrors(form, controls, formErrors, response.data);
    const marked = controls.some((control) => control.getAttribute("aria-invalid") === "true");
    body.replaceChildren(el("p", { class: "muted" }, marked ? "Fix the highlighted fields to see the evaluation."
      : `No evaluation: ${errorLines(response.data).join(" ")}`));
    status.textContent = failed(response.data);
  }
}
