// GPU detail: every device signal over a chosen range (server-side downsampled), throttle reasons
// and alert intervals on the time axis, the processes and jobs on the GPU, its health.
import { chart, gpuView, SLOWDOWN_REASONS } from '../api.js';
import { TimeChart } from '../chart.js';
import { ago, bytes, celsius, clock, count, duration, html, mhz, pct, render, si, watts } from '../format.js';

const RANGES = [['15m', 900], ['1h', 3600], ['6h', 21600], ['24h', 86400], ['7d', 604800]];
const COLORS = ['#4493f8', '#f0883e', '#3fb950', '#bc8cff', '#e3b341', '#39c5cf', '#ff7b72', '#8b949e'];
const LEVEL_RGBA = { info: 'rgba(68,147,248,0.07)', warning: 'rgba(210,153,34,0.16)', critical: 'rgba(248,81,73,0.16)' };
const ALERT_RGBA = { firing: 'rgba(248,81,73,0.22)', pending: 'rgba(210,153,34,0.18)' };

// Each chart: the metrics it draws; `split` names the label that tells its series apart, `only`
// keeps series with these labels.
const CHARTS = [
  { title: 'Utilization', format: (v) => pct(v), yMin: 0, yMax: 1, lines: [
    { metric: 'gpu_utilization_ratio', label: 'SM' }, { metric: 'gpu_memory_utilization_ratio', label: 'memory controller' }] },
  { title: 'Memory in use', format: bytes, yMin: 0, lines: [
    { metric: 'gpu_memory_used_bytes', label: 'used' }, { metric: 'gpu_memory_used_peak_bytes', label: 'peak' }],
  hlines: (v) => [{ value: v.m.gpu_memory_total_bytes, label: 'total' }] },
  { title: 'Temperature', format: celsius, lines: [
    { metric: 'gpu_temperature_celsius', label: 'GPU' }, { metric: 'gpu_memory_temperature_celsius', label: 'HBM' }],
  hlines: (v) => [{ value: v.slowdownC, label: 'slowdown' }, { value: v.gpuMaxC, label: 'GPU max', color: '#d29922' }] },
  { title: 'Power', format: watts, yMin: 0, lines: [
    { metric: 'gpu_power_watts', label: 'draw' }, { metric: 'gpu_power_peak_watts', label: 'peak' }],
  hlines: (v) => [{ value: v.m.gpu_power_limit_watts, label: 'limit' }] },
  { title: 'Clocks', format: mhz, axis: (v) => `${(v / 1e9).toFixed(1)} GHz`, yMin: 0, lines: [
    { metric: 'gpu_sm_clock_hertz', label: 'SM' }, { metric: 'gpu_memory_clock_hertz', label: 'memory' }],
  hlines: (v) => [{ value: v.m.gpu_sm_clock_max_hertz, label: 'SM max', color: '#8b949e' }] },
  { title: 'PCIe throughput', format: (v) => si(v, 'B/s'), axis: (v) => si(v, 'B/s', 0), yMin: 0, lines: [
    { metric: 'gpu_pcie_transmit_bytes_per_second', label: 'transmit' }, { metric: 'gpu_pcie_receive_bytes_per_second', label: 'receive' }] },
  { title: 'Fan', format: (v) => pct(v), yMax: 1, yMin: 0, lines: [
    { metric: 'gpu_fan_speed_ratio', label: 'fan' }] },
  { title: 'Video engines', format: (v) => pct(v), yMin: 0, lines: [
    { metric: 'gpu_encoder_utilization_ratio', label: 'encoder' }, { metric: 'gpu_decoder_utilization_ratio', label: 'decoder' }] },
  { title: 'ECC errors since reset', format: count, integer: true, yMin: 0, lines: [
    { metric: 'gpu_ecc_errors_total', split: 'type', only: { scope: 'volatile' } }] },
  { title: 'PCIe replays and XID errors', format: count, integer: true, yMin: 0, lines: [
    { metric: 'gpu_pcie_replays_total', label: 'PCIe replays' }, { metric: 'gpu_xid_errors_total', split: 'xid', prefix: 'XID ' }] },
];

let st = null;

function rangeOf(query) {
  const r = RANGES.find(([name]) => name === query.get('range'));
  return r ? r[1] : 3600;
}

// Bucket runs where `values[i] > 0`, as [from, to] index pairs.
function runs(values) {
  const out = [];
  let from = -1;
  values.forEach((v, i) => {
    const on = v !== null && v > 0;
    if (on && from < 0) from = i;
    if (!on && from >= 0) { out.push([from, i - 1]); from = -1; }
  });
  if (from >= 0) out.push([from, values.length - 1]);
  return out;
}

function lanes(throttle, alerts) {
  const out = [];
  for (const s of throttle.series) {
    const info = SLOWDOWN_REASONS[s.labels.reason];
    if (!info) continue;
    const r = runs(s.max);
    if (r.length) out.push({ label: info.label, kind: 'throttle', level: info.level, runs: r, color: LEVEL_RGBA[info.level].replace(/0\.\d+\)$/, '0.85)') });
  }
  for (const s of alerts.series) {
    const r = runs(s.max);
    if (r.length) out.push({ label: `${s.labels.alertname} (${s.labels.alertstate})`, kind: 'alert', state: s.labels.alertstate, runs: r, color: s.labels.alertstate === 'firing' ? '#f85149' : '#d29922' });
  }
  return out;
}

function timeline(lanesList, d) {
  if (!lanesList.length) return html`<div class="muted">No throttling and no alert on this GPU in this range.</div>`;
  const pctOf = (i) => ((i / d.points) * 100).toFixed(2);
  return html`${lanesList.map((l) => html`<div class="lane" data-kind="${l.kind}"><span>${l.kind === 'alert' ? '⚑ ' : ''}${l.label}</span><div class="track">${l.runs.map(([a, b]) => html`<span style="left:${pctOf(a)}%;width:${pctOf(b + 1 - a)}%;background:${l.color}" title="${clock(d.start + a * d.step)}–${clock(d.start + (b + 1) * d.step)}"></span>`)}</div></div>`)}
    <div class="axis"><div></div><div><span>${clock(d.start, true)}</span><span>${clock((d.start + d.end) / 2)}</span><span>${clock(d.end)}</span></div></div>`;
}

function linesFor(spec, data) {
  const out = [];
  spec.lines.forEach((l) => {
    for (const s of data[l.metric]?.series || []) {
      if (l.only && Object.entries(l.only).some(([k, val]) => s.labels[k] !== val)) continue;
      out.push({ label: l.split ? `${l.prefix || ''}${s.labels[l.split]}` : l.label, avg: s.avg, min: s.min, max: s.max });
    }
  });
  return out.map((l, i) => ({ ...l, color: COLORS[i % COLORS.length] }));
}

function kpi(label, value, level = '') {
  return html`<div class="kpi card ${level}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
}

function renderInfo(v, ctx) {
  const m = v.m;
  const tMargin = v.slowdownC && m.gpu_temperature_celsius !== undefined ? v.slowdownC - m.gpu_temperature_celsius : undefined;
  render(st.els.head, html`<div><a href="#/fleet">← Fleet</a><h1>GPU ${v.index} · ${v.name} <span class="pill ${v.state}">${v.state}</span></h1>
    <div class="ident"><span>UUID <b class="mono">${v.uuid}</b></span><span>serial <b>${v.serial || '–'}</b></span><span>PCI <b class="mono">${v.pci || '–'}</b></span>
    <span>driver <b>${ctx.snapshot.driver_version || '–'}</b></span>${v.jobs[0] ? html`<span>job <b><a href="#/jobs">${v.jobs[0].name || v.jobs[0].job_id}</a></b> · team <b>${v.jobs[0].team}</b></span>` : ''}</div></div>
    <div class="toolbar"><div class="seg">${RANGES.map(([name, s]) => html`<button type="button" data-range="${name}" class="${s === st.range ? 'on' : ''}">${name}</button>`)}</div></div>`);
  st.els.head.querySelectorAll('[data-range]').forEach((b) => b.addEventListener('click', () => {
    st.range = RANGES.find(([n]) => n === b.dataset.range)[1];
    history.replaceState(null, '', `#/gpu/${st.index}?range=${b.dataset.range}`);
    st.fetchedAt = -Infinity;
    renderInfo(v, ctx);
    refreshCharts(ctx);
  }));
  if (v.lost) {
    render(st.els.kpis, kpi('State', 'lost', 'critical'));
  } else {
    render(st.els.kpis, [
      kpi('Utilization', pct(m.gpu_utilization_ratio)),
      kpi('Memory', html`${bytes(m.gpu_memory_used_bytes)}<small> / ${bytes(m.gpu_memory_total_bytes)}</small>`),
      kpi('Temperature', html`${celsius(m.gpu_temperature_celsius)}<small> ${v.slowdownC !== undefined ? `/ ${celsius(v.slowdownC)}` : ''}</small>`, tMargin !== undefined && tMargin <= 3 ? 'critical' : tMargin !== undefined && tMargin <= 8 ? 'warning' : ''),
      kpi('Power', html`${watts(m.gpu_power_watts)}<small> / ${watts(m.gpu_power_limit_watts)}</small>`),
      kpi('SM clock', html`${mhz(m.gpu_sm_clock_hertz)}`),
      kpi('Throttling', v.throttles.length ? html`<span class="text">${v.throttles.map((t) => t.label).join(', ')}</span>` : 'none', v.throttles.some((t) => t.level !== 'info') ? 'warning' : ''),
      kpi('ECC corr. / uncorr.', html`${count(v.eccVolatile.corrected)}<small> / </small>${count(v.eccVolatile.uncorrected)}`, v.eccVolatile.uncorrected > 0 ? 'critical' : ''),
      kpi('XID errors', count(v.xids), v.xids ? 'warning' : ''),
    ]);
  }
  const health = v.health.length
    ? v.health.map((h) => html`<tr><td><span class="pill ${h.severity}">${h.severity}</span></td><td>${h.problem}</td><td class="muted">${h.action}</td></tr>`)
    : html`<tr><td colspan="3" class="muted">No health problem.</td></tr>`;
  const alerts = [...v.firing, ...v.pending].map((a) => html`<tr><td><span class="pill ${a.state}">${a.state}</span></td><td><b>${a.labels.alertname}</b><br><small>${a.annotations.summary}</small></td><td class="muted">${ago(Date.parse(a.activeAt) / 1000, ctx.now)}</td></tr>`);
  const procs = v.processes.length
    ? v.processes.map((p) => html`<tr><td class="mono">${p.pid}</td><td class="num">${bytes(p.memory_bytes)}</td><td class="num">${p.sm_utilization_ratio === undefined ? '–' : pct(p.sm_utilization_ratio)}</td></tr>`)
    : html`<tr><td colspan="3" class="muted">No compute process.</td></tr>`;
  const jobs = v.jobs.length
    ? v.jobs.map((j) => html`<tr><td><b>${j.name || j.job_id}</b><br><small class="mono">${j.job_id}</small></td><td>${j.user || '–'}</td><td>${j.team}</td><td class="num">${duration(ctx.now - j.start_time)}</td><td class="num">${j.gpu ? `${Math.round(j.gpu.util_avg_pct)} %` : '–'}</td></tr>`)
    : html`<tr><td colspan="5" class="muted">No job holds this GPU.</td></tr>`;
  render(st.els.tables, html`<div class="two">
    <div class="card tablewrap"><table><thead><tr><th>Health</th><th>Problem</th><th>What to do</th></tr></thead><tbody>${health}${alerts}</tbody></table></div>
    <div class="card tablewrap"><table><thead><tr><th>Job</th><th>User</th><th>Team</th><th class="num">Running</th><th class="num">Util avg</th></tr></thead><tbody>${jobs}</tbody></table>
    <table><thead><tr><th>Process</th><th class="num">Memory</th><th class="num">SM util</th></tr></thead><tbody>${procs}</tbody></table></div></div>`);
}

async function refreshCharts(ctx) {
  if (!ctx.info.history) {
    render(st.els.timeline, html`<div class="muted">This agent keeps no history: charts need the store (storage.path).</div>`);
    return;
  }
  const token = (st.token = (st.token || 0) + 1);
  const width = st.els.charts.clientWidth > 900 ? (st.els.charts.clientWidth - 16) / 2 : st.els.charts.clientWidth;
  const points = Math.max(60, Math.min(1200, Math.round((width - 70) / 60) * 60));
  const step = st.range / points;
  const end = Math.ceil(ctx.now / step) * step;
  const start = end - st.range;
  const metrics = [...new Set(CHARTS.flatMap((c) => c.lines.map((l) => l.metric)))];
  const q = { gpu: st.index, start, end, points };
  const [throttle, alerts, ...results] = await Promise.all([
    chart('gpu_clock_event_active', q), chart('ALERTS', q), ...metrics.map((name) => chart(name, q))]);
  if (!st || token !== st.token) return;  // a newer refresh or another page took over
  st.fetchedAt = ctx.now;
  const data = Object.fromEntries(metrics.map((name, i) => [name, results[i]]));
  const laneList = lanes(throttle, alerts);
  render(st.els.timeline, html`<header><h3>Throttling and alerts</h3></header>${timeline(laneList, { start, end, step, points })}`);
  const bands = [];
  for (const l of laneList) {
    if (l.kind === 'alert' && l.state !== 'firing') continue;  // pending ones: timeline only
    const color = l.kind === 'alert' ? ALERT_RGBA[l.state] : LEVEL_RGBA[l.level];
    for (const [from, to] of l.runs) bands.push({ from, to, color });
  }
  const v = st.view;
  for (const c of st.charts) {
    const lines = linesFor(c.spec, data);
    c.chart.el.hidden = lines.length === 0 && c.spec.title !== 'Utilization';
    const hl = (c.spec.hlines ? c.spec.hlines(v) : []).filter((h) => h.value !== undefined)
      .map((h) => ({ ...h, label: `${h.label} ${c.spec.format(h.value)}`, color: h.color || '#f85149' }));
    c.chart.set({ start, end, step, points, lines, hlines: hl, bands });
  }
}

export default {
  title: (route) => `GPU ${route.args[0] ?? ''}`,
  mount(root, ctx) {
    root.innerHTML = `<div class="pagehead"></div><div class="kpis detail"></div><div class="timeline card"></div>
      <div class="charts"></div><h2>Health, jobs and processes</h2><div class="tables"></div>`;
    st = {
      index: ctx.route.args[0] || '0', range: rangeOf(ctx.route.query), fetchedAt: -Infinity, charts: [], view: null,
      els: { head: root.querySelector('.pagehead'), kpis: root.querySelector('.kpis'), timeline: root.querySelector('.timeline'),
        charts: root.querySelector('.charts'), tables: root.querySelector('.tables') },
    };
    for (const spec of CHARTS) {
      const c = new TimeChart(st.els.charts, { title: spec.title, format: spec.format, axis: spec.axis, integer: spec.integer, yMin: spec.yMin, yMax: spec.yMax });
      st.charts.push({ spec, chart: c });
      c.onHover = (i) => st.charts.forEach((o) => o.chart.hover(i));
    }
  },
  async update(ctx) {
    const g = ctx.snapshot.gpus.find((x) => String(x.index) === st.index);
    if (!g) {
      render(st.els.head, html`<div><a href="#/fleet">← Fleet</a><h1>GPU ${st.index}</h1></div>`);
      render(st.els.kpis, html`<div class="card empty"><b>No GPU ${st.index} on this node</b>The snapshot lists GPUs 0–${ctx.snapshot.gpus.length - 1}.</div>`);
      return;
    }
    st.view = gpuView(g, ctx.alerts, ctx.jobs);
    renderInfo(st.view, ctx);
    const every = Math.max(2, st.range / 360);
    if (ctx.now - st.fetchedAt >= every || ctx.now < st.fetchedAt) await refreshCharts(ctx);
  },
  redraw() { st?.charts.forEach((c) => c.chart.draw()); },
  unmount() { st?.charts.forEach((c) => c.chart.destroy()); st = null; },
};
