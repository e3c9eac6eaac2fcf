// Calls to the REST API with the page's session and CSRF token; errors come back as data, not throws.
const csrf = () => document.querySelector("meta[name=csrf-token]")?.content ?? "";

// A FormData body goes as multipart (file uploads); anything else as JSON. ``ifMatch``: the ETag the
// page read the object at, so that a change made since answers 412 instead of being overwritten.
export async function api(path, { method = "GET", body, ifMatch } = {}) {
  const headers = { Accept: "application/json" };
  if (ifMatch) headers["If-Match"] = ifMatch;
  const multipart = body instanceof FormData;
  if (body !== undefined && !multipart) headers["Content-Type"] = "application/json";
  if (method !== "GET") headers["X-CSRFToken"] = csrf();
  const response = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined || multipart ? body : JSON.stringify(body),
  });
  let data = null;
  const type = response.headers.get("Content-Type") || "";
  if (type.includes("json")) data = await response.json();
  else if (response.status !== 204) data = { detail: await response.text() };
  return { ok: response.ok, status: response.status, data };
}

// An error's lines: each bad field's "field: reason" (the problem document's errors), an impossible
// plan's reasons, else its detail (every API error is an RFC 9457 problem document).
// Field -> reasons, a nested section's fields named by their dotted path (facility.power_mw).
export function fieldLines(errors, prefix) {
  return Object.entries(errors).flatMap(([field, reasons]) => {
    const name = `${prefix}${field}`;
    if (reasons && typeof reasons === "object" && !Array.isArray(reasons)) return fieldLines(reasons, `${name}.`);
    return (Array.isArray(reasons) ? reasons : [reasons]).map((reason) =>
      typeof reason === "object" ? `${name}: ${JSON.stringify(reason)}` : `${name}: ${reason}`);
  });
}

export function errorLines(data) {
  if (!data || typeof data !== "object") return [String(data)];
  if (data.errors) return fieldLines(data.errors, "");
  if (data.reasons) return data.reasons;
  return [String(data.detail ?? data.title ?? "error")];
}

// A websocket to this server, reconnecting with back-off until closed for good (4401/4403).
export function socket(path, onMessage, onStatus = () => {}) {
  let ws, retry = 500, stopped = false;
  const open = () => {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    ws = new WebSocket(`${scheme}://${location.host}${path}`);
    ws.onopen = () => { retry = 500; onStatus("live"); };
    ws.onmessage = (event) => onMessage(JSON.parse(event.data));
    ws.onclose = (event) => {
      if (stopped || event.code === 4401 || event.code === 4403) { onStatus(event.code >= 4400 ? "refused" : "closed"); return; }
      onStatus("reconnecting");
      setTimeout(open, retry);
      retry = Math.min(retry * 2, 10000);
    };
  };
  open();
  return { close() { stopped = true; ws.close(); } };
}

export const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {  // nested lists of children, never a list printed with commas
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
};
