// Talking to the agent. Every call resolves (never rejects): failures come back as
// {error: "..."} and an endpoint this agent does not have as {missing: true}, so pages can say
// "not available on this agent" instead of breaking.
import { parseMetricKey, worst } from './format.js';

// Under `gpuwarden hub` (docs/hub.md) the console shows a fleet: `scope.node` is the node chosen
// (app.js sets it from the route), and every API request carries it as `node=`. On an agent
// `scope.hub` stays false and no request changes.
export const scope = { hub: false, node: '', nodeLabel: 'instance' };  // nodeLabel: the hub's
export function scoped(path) {
  if (!scope.node || !path.startsWith('/api/')) return path;
  return `${path}${path.includes('?') ? '&' : '?'}node=${encodeURIComponent(scope.node)}`;
}

export async function getJson(path) {
  let res;
  try {
    res = await fetch(scoped(path), { headers: { Accept: 'application/json' } });
  } catch (e) {
    return { error: `the agent did not answer (${e.message})` };
  }
  if (res.status === 404) return { missing: true };
  let body;
  try {
    body = await res.json();
  } catch (e) {
    return { error: `${path}: HTTP ${res.status}, not JSON` };
  }
  if (!res.ok || body.status === 'error') return { error: body.error || `${path}: HTTP ${res.status}` };
  return body;
}

// The buckets a chart asks for over the range r = {start, end, live} (seconds): `points` equal
// steps, a live range ending on a step so that refreshes keep the buckets. In a live range,
// steps of 5 minutes or more become whole 5-minute windows on window boundaries (slightly wider,
// fewer buckets), which the agent answers from its rollups instead of the raw samples
// (web/chart.h): a week in milliseconds instead of seconds. An absolute range is kept as chosen.
export const ROLLUP_WINDOW_S = 300;
export function chartGrid(r, points) {
  let step = (r.end - r.start) / points;
  if (step < ROLLUP_WINDOW_S || !r.live) {
    const end = r.live ? Math.ceil(r.end / step) * step : r.end;
    return { start: end - (r.end - r.start), end, step, points };
  }
  step = Math.ceil(step / ROLLUP_WINDOW_S) * ROLLUP_WINDOW_S;
  const n = Math.ceil((r.end - r.start) / step);
  const end = Math.ceil(r.end / step) * step;
  return { start: end - n * step, end, step, points: n };
}

// Downsampled history (web/chart.h): {start, end, step, points, series:[{labels, min, max, avg}]}
export async function chart(metric, { gpu, start, end, points }) {
  const g = gpu === undefined || gpu === null ? '' : `&gpu=${gpu}`;
  const r = await getJson(`/api/gw/v1/chart?metric=${metric}${g}&start=${start}&end=${end}&points=${points}`);
  return r.data || { start, end, step: (end - start) / points, points, series: [], error: r.error };
}

// Reasons that mean the GPU is being slowed (gpu_idle and settings are not problems).
export const SLOWDOWN_REASONS = {
  sw_power_cap: { label: 'power cap', level: 'info' },
  hw_slowdown: { label: 'HW slowdown', level: 'critical' },
  hw_thermal_slowdown: { label: 'HW thermal slowdown', level: 'critical' },
  hw_power_brake_slowdown: { label: 'power brake', level: 'critical' },
  sw_thermal_slowdown: { label: 'SW thermal slowdown', level: 'warning' },
  sync_boost: { label: 'sync boost', level: 'info' },
};

// Busy but hollow: utilization at least HOLLOW_UTILIZATION while SM active (GPM) stays under
// HOLLOW_SM_ACTIVE (the same values as `gpuwarden top`, src/top/frame.h).
export const HOLLOW_UTILIZATION = 0.8;
export const HOLLOW_SM_ACTIVE = 0.25;

// The profiling signals (GPM) the GPU page shows: [key, metric, pipe label or undefined, label].
export const GPM_SIGNALS = [
  ['smActive', 'gpu_sm_active_ratio', undefined, 'SM active'],
  ['smOccupancy', 'gpu_sm_occupancy_ratio', undefined, 'SM occupancy'],
  ['tensor', 'gpu_tensor_active_ratio', 'any', 'Tensor active'],
  ['dram', 'gpu_dram_active_ratio', undefined, 'DRAM active'],
  ['graphics', 'gpu_graphics_active_ratio', undefined, 'Graphics engine'],
  ['hmma', 'gpu_tensor_active_ratio', 'hmma', 'Tensor HMMA'],
  ['imma', 'gpu_tensor_active_ratio', 'imma', 'Tensor IMMA'],
  ['dmma', 'gpu_tensor_active_ratio', 'dmma', 'Tensor DMMA'],
  ['dfma', 'gpu_tensor_active_ratio', 'dfma', 'Tensor DFMA'],
  ['fp16', 'gpu_pipe_active_ratio', 'fp16', 'FP16 pipe'],
  ['fp32', 'gpu_pipe_active_ratio', 'fp32', 'FP32 pipe'],
  ['fp64', 'gpu_pipe_active_ratio', 'fp64', 'FP64 pipe'],
  ['integer', 'gpu_pipe_active_ratio', 'integer', 'Integer pipe'],
];

// One GPU of /api/snapshot, with its metrics by name and what the console derives from them.
export function gpuView(gpu, alerts, jobs) {
  const m = {};
  const labelled = {};
  for (const [key, value] of Object.entries(gpu.metrics || {})) {
    const { name, labels } = parseMetricKey(key);
    if (Object.keys(labels).length === 0) m[name] = value;
    else (labelled[name] ||= []).push({ labels, value });
  }
  const pick = (name, label, value) => (labelled[name] || []).find((s) => s.labels[label] === value)?.value;
  const index = String(gpu.index);
  const holders = jobs.filter((j) => j.gpu && (j.gpu.gpus || []).includes(gpu.index));
  // Alerts about this GPU, and about a job holding it (a job's alerts carry no gpu label).
  const held = new Set(holders.map((j) => j.job_id));
  const about = (a) => a.labels.gpu === index || (a.labels.gpu === undefined && a.labels.job_id !== undefined && held.has(a.labels.job_id));
  const firing = alerts.filter((a) => about(a) && a.state === 'firing');
  const pending = alerts.filter((a) => about(a) && a.state === 'pending');
  const throttles = (labelled.gpu_clock_event_active || [])
    .filter((s) => s.value > 0 && SLOWDOWN_REASONS[s.labels.reason])
    .map((s) => ({ reason: s.labels.reason, ...SLOWDOWN_REASONS[s.labels.reason] }));
  const eccUncorrected = pick('gpu_ecc_errors_total', 'type', 'uncorrected') || 0;
  const eccVolatile = (labelled.gpu_ecc_errors_total || [])
    .filter((s) => s.labels.scope === 'volatile')
    .reduce((acc, s) => ({ ...acc, [s.labels.type]: s.value }), {});
  const xids = Object.values(gpu.xid_counts || {}).reduce((a, b) => a + b, 0);
  const lost = gpu.lost || !gpu.up;
  let state = 'ok';
  if (lost) state = 'lost';
  else {
    state = worst(
      ...firing.map((a) => ({ critical: 'critical', warning: 'warning' })[a.labels.severity] || 'none'),
      ...(gpu.health || []).map((h) => (h.severity === 'info' ? 'none' : h.severity)),
      ...throttles.map((t) => (t.level === 'info' ? 'none' : t.level === 'critical' ? 'warning' : t.level)),
      (eccVolatile.uncorrected || 0) > 0 ? 'critical' : 'none',
      (gpu.nvlinks || []).some((l) => l.up === false) ? 'warning' : 'none',
    );
    if (state === 'none') state = 'ok';
  }
  // Profiling values (undefined where absent: never shown as 0), MIG and NVLink.
  const gpm = {};
  for (const [key, metric, pipe] of GPM_SIGNALS) gpm[key] = pipe === undefined ? m[metric] : pick(metric, 'pipe', pipe);
  const hollow = !lost && m.gpu_utilization_ratio >= HOLLOW_UTILIZATION && gpm.smActive !== undefined && gpm.smActive < HOLLOW_SM_ACTIVE;
  const nvlinkErrors = {};
  for (const s of labelled.gpu_nvlink_errors_total || []) nvlinkErrors[s.labels.type] = s.value;
  return {
    index: gpu.index, name: gpu.name, uuid: gpu.uuid, serial: gpu.serial, pci: gpu.pci_bus_id,
    gpmSupported: Boolean(gpu.gpm_supported), gpm, hollow,
    migCurrent: pick('gpu_mig_enabled', 'state', 'current'), migPending: pick('gpu_mig_enabled', 'state', 'pending'),
    mig: gpu.mig || [], nvlinks: gpu.nvlinks || [], nvlinkErrors,
    lost, state, m, labelled, firing, pending, throttles, eccVolatile, eccUncorrected, xids,
    health: gpu.health || [], processes: gpu.processes || [], xidCounts: gpu.xid_counts || {},
    slowdownC: pick('gpu_temperature_threshold_celsius', 'threshold', 'slowdown'),
    shutdownC: pick('gpu_temperature_threshold_celsius', 'threshold', 'shutdown'),
    gpuMaxC: pick('gpu_temperature_threshold_celsius', 'threshold', 'gpu_max'),
    memMaxC: pick('gpu_temperature_threshold_celsius', 'threshold', 'memory_max'),
    jobs: holders,
  };
}

// Series of /metrics whose family `keep(name)` wants: [{name, labels, value}]: the latest values
// of the task-layer and governance families (jobs, queue, allocation, quota, cost) in one request.
// (They are in the agent's store too; PromQL serves their history.)
export async function scrape(keep) {
  let text;
  try {
    const res = await fetch(scope.hub ? scoped('/api/gw/v1/hub/exposition') : '/metrics');
    if (!res.ok) return [];
    text = await res.text();
  } catch (e) {
    return [];
  }
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const brace = line.indexOf('{');
    const space = brace >= 0 ? line.lastIndexOf('} ') + 1 : line.indexOf(' ');
    const name = line.slice(0, brace >= 0 ? brace : space);
    if (!keep(name)) continue;
    const { labels } = parseMetricKey(brace >= 0 ? line.slice(0, space) : name);
    out.push({ name, labels, value: Number(line.slice(space + 1).split(' ')[0]) });
  }
  return out;
}

// histogram_quantile over buckets [{le, value}] (cumulative counts), as Prometheus interpolates.
export function histogramQuantile(q, buckets) {
  const b = buckets.map((x) => ({ le: x.le === '+Inf' ? Infinity : Number(x.le), v: x.value })).sort((x, y) => x.le - y.le);
  if (!b.length || b[b.length - 1].v === 0) return undefined;
  const rank = q * b[b.length - 1].v;
  const i = b.findIndex((x) => x.v >= rank);
  if (b[i].le === Infinity) return i > 0 ? b[i - 1].le : undefined;
  const lo = i > 0 ? b[i - 1].le : 0;
  const below = i > 0 ? b[i - 1].v : 0;
  return lo + (b[i].le - lo) * ((rank - below) / Math.max(1e-12, b[i].v - below));
}
