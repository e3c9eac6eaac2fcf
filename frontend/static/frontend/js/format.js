// Number formatting with the unit a field's name carries (power_w, bw_gbyte_s, time_s, ...).
export const SI = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];

export function num(value, digits = 3) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  if (!Number.isFinite(value)) return "–";
  const abs = Math.abs(value);
  if (abs !== 0 && (abs >= 1e15 || abs < 1e-3)) return value.toExponential(2);
  if (abs >= 1000) return Math.round(value).toLocaleString("en-US");
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  return value.toLocaleString("en-US", { maximumSignificantDigits: digits + 1 });
}

export function si(value, unit = "", digits = 3) {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  const abs = Math.abs(value);
  for (const [scale, prefix] of SI) {
    if (abs >= scale) return `${(value / scale).toPrecision(digits)} ${prefix}${unit}`;
  }
  return `${Number(value.toPrecision(digits))} ${unit}`.trim();
}

export const percent = (fraction, digits = 1) =>
  fraction === null || fraction === undefined || !Number.isFinite(fraction) ? "–" : `${(fraction * 100).toFixed(digits)}%`;

export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  if (seconds !== 0 && Math.abs(seconds) < 1e-3) return `${num(seconds * 1e6)} µs`;
  if (seconds !== 0 && Math.abs(seconds) < 1) return `${num(seconds * 1e3)} ms`;
  if (seconds < 120) return `${num(seconds)} s`;
  if (seconds < 7200) return `${(seconds / 60).toFixed(1)} min`;
  if (seconds < 172800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} days`;
}

// A count with its noun, singular for one: "1 node", "1,240 nodes".
export const count = (n, noun, plural = `${noun}s`) => `${num(n)} ${n === 1 ? noun : plural}`;
