// Formatting and HTML helpers shared by every page. Values arrive in base units (bytes, watts,
// celsius, hertz, ratios 0-1, Unix seconds) and are shown the way an operator reads them.

export class Raw {
  constructor(text) { this.text = text; }
  toString() { return this.text; }
}

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function esc(text) { return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]); }

function part(v) {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return v.map(part).join('');
  if (v === null || v === undefined || v === false) return '';
  return esc(v);
}

// html`<b>${name}</b>` escapes every interpolation unless it is itself html`...` (or a list of them).
export function html(strings, ...values) {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1];
  return new Raw(out);
}

export function render(el, content) { el.innerHTML = part(content); }

const num = (v, digits) => Number(v).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function pct(ratio, digits = 0) {
  return ratio === undefined || ratio === null || Number.isNaN(ratio) ? '–' : `${num(ratio * 100, digits)}\u00a0%`;
}

export function bytes(v) {
  if (v === undefined || v === null) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let x = Math.abs(v);
  while (x >= 1024 && i < units.length - 1) { x /= 1024; i++; }
  return `${v < 0 ? '-' : ''}${num(x, x >= 100 || i === 0 ? 0 : 1)}\u00a0${units[i]}`;
}

export function si(v, unit, digits = 1) {
  if (v === undefined || v === null || Number.isNaN(v)) return '–';
  const prefixes = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [f, p] of prefixes) if (Math.abs(v) >= f) return `${num(v / f, digits)}\u00a0${p}${unit}`;
  return `${num(v, Math.abs(v) >= 100 || Number.isInteger(v) ? 0 : digits)}\u00a0${unit}`;
}

export const watts = (v) => (v === undefined ? '–' : `${num(v, 0)}\u00a0W`);
export const celsius = (v) => (v === undefined ? '–' : `${num(v, 0)}\u00a0°C`);
export const mhz = (hz) => (hz === undefined ? '–' : `${num(hz / 1e6, 0)}\u00a0MHz`);
export const count = (v) => (v === undefined || v === null ? '–' : num(v, 0));

export function duration(seconds) {
  if (seconds === undefined || seconds === null || Number.isNaN(seconds)) return '–';
  let s = Math.max(0, Math.round(seconds));
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

export function ago(thenS, nowS) {
  if (!thenS) return '–';
  const d = nowS - thenS;
  return d < 0 ? `in ${duration(-d)}` : `${duration(d)} ago`;
}

const pad = (n) => String(n).padStart(2, '0');
export function clock(unixS, withDate = false) {
  const t = new Date(unixS * 1000);
  const hm = `${pad(t.getHours())}:${pad(t.getMinutes())}`;
  return withDate ? `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())} ${hm}` : hm;
}
export function clockSeconds(unixS) {
  const t = new Date(unixS * 1000);
  return `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}`;
}

// "gpu_ecc_errors_total{type=\"corrected\",scope=\"volatile\"}" -> {name, labels}
export function parseMetricKey(key) {
  const brace = key.indexOf('{');
  if (brace < 0) return { name: key, labels: {} };
  const labels = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  let m;
  while ((m = re.exec(key.slice(brace))) !== null) labels[m[1]] = m[2].replace(/\\(.)/g, '$1');
  return { name: key.slice(0, brace), labels };
}

export const severityRank = { critical: 3, warning: 2, info: 1, none: 0 };
export function worst(...levels) {
  return levels.reduce((a, b) => ((severityRank[b] || 0) > (severityRank[a] || 0) ? b : a), 'none');
}

// An amount of money in the agent's currency (governance.prices.currency): two decimals from 1
// up, three significant digits below (a cost per output is often a fraction of a cent).
export function money(v, currency) {
  if (v === undefined || v === null || Number.isNaN(v)) return '–';
  const a = Math.abs(v);
  const text = a >= 1 || a === 0 ? num(v, 2) : Number(v).toLocaleString('en-US', { maximumSignificantDigits: 3 });
  return `${text}\u00a0${currency}`;
}

// "request" -> "requests" (a unit already ending in s is kept); "" -> "outputs".
export function plural(unit) {
  if (!unit) return 'outputs';
  return unit.endsWith('s') ? unit : `${unit}s`;
}
