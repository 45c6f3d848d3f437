// GPU detail: every device signal over a chosen range (server-side downsampled), throttle reasons
// and alert intervals on the time axis, the processes and jobs on the GPU, its health; on
// datacenter GPUs the profiling signals (GPM) next to utilization with a warning when the GPU is
// busy but hollow, its MIG instances and its NVLink links.
import { chart, chartGrid, gpuView, GPM_SIGNALS, HOLLOW_SM_ACTIVE, HOLLOW_UTILIZATION, SLOWDOWN_REASONS } from '../api.js';
import { episodeGap, episodes, TimeChart } from '../chart.js';
import { ago, bytes, celsius, clock, count, duration, html, mhz, pct, render, si, watts } from '../format.js';
import { rangeToolbar } from '../timerange.js';
import { activeSince, alertHref, alertSubject, jobCell, jobLink, teamLink } from './links.js';
import { loadReclaim, reclaimCard } from './governance.js';

const COLORS = ['#4493f8', '#f0883e', '#3fb950', '#bc8cff', '#e3b341', '#39c5cf', '#ff7b72', '#8b949e'];
const LEVEL_RGBA = { info: 'rgba(68,147,248,0.07)', warning: 'rgba(210,153,34,0.16)', critical: 'rgba(248,81,73,0.16)' };
const ALERT_RGBA = { firing: 'rgba(248,81,73,0.22)', pending: 'rgba(210,153,34,0.18)' };

// Each chart: the metrics it draws; `split` names the label that tells its series apart (`names`
// renames its values), `only` keeps series with these labels; `minSpan`: the least y range drawn
// (so that a flat zero is not scaled up to fractions of a byte).
// `name(labels)`: a series labelled by its labels (the MIG instances).
const migName = (l) => `${l.mig_profile} · instance ${l.mig_instance}`;
const CHARTS = [
  { title: 'Utilization and SM active', format: (v) => pct(v), yMin: 0, yMax: 1, lines: [
    { metric: 'gpu_utilization_ratio', label: 'utilization (any kernel)' }, { metric: 'gpu_sm_active_ratio', label: 'SM active' },
    { metric: 'gpu_memory_utilization_ratio', label: 'memory controller' }] },
  { title: 'Profiling (GPM)', format: (v) => pct(v), yMin: 0, yMax: 1, lines: [
    { metric: 'gpu_sm_occupancy_ratio', label: 'SM occupancy' }, { metric: 'gpu_tensor_active_ratio', label: 'tensor active', only: { pipe: 'any' } },
    { metric: 'gpu_dram_active_ratio', label: 'DRAM active' }, { metric: 'gpu_pipe_active_ratio', split: 'pipe', suffix: ' pipe' }] },
  { title: 'MIG instances: SM active', format: (v) => pct(v), yMin: 0, yMax: 1, lines: [
    { metric: 'gpu_mig_sm_active_ratio', name: migName }] },
  { title: 'MIG instances: memory used', format: bytes, yMin: 0, lines: [
    { metric: 'gpu_mig_memory_used_bytes', name: migName }] },
  { title: 'NVLink throughput', format: (v) => si(v, 'B/s'), axis: (v) => si(v, 'B/s', 0), yMin: 0, minSpan: 1e9, lines: [
    { metric: 'gpu_nvlink_transmit_bytes_per_second', label: 'transmit' }, { metric: 'gpu_nvlink_receive_bytes_per_second', label: 'receive' }] },
  { title: 'NVLink errors', format: count, integer: true, yMin: 0, lines: [
    { metric: 'gpu_nvlink_errors_total', split: 'type', names: { replay: 'replay', recovery: 'recovery', crc_flit: 'CRC flit', crc_data: 'CRC data', ecc_data: 'ECC data' } },
    { metric: 'gpu_nvlink_links_down', label: 'links down' }] },
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
  { title: 'PCIe throughput', format: (v) => si(v, 'B/s'), axis: (v) => si(v, 'B/s', 0), yMin: 0, minSpan: 1e6, lines: [
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

function lanes(throttle, alerts, gapS) {
  const out = [];
  for (const s of throttle.series) {
    const info = SLOWDOWN_REASONS[s.labels.reason];
    if (!info) continue;
    const r = runs(s.max);
    if (r.length) out.push({ label: info.label, kind: 'throttle', level: info.level, runs: r, color: LEVEL_RGBA[info.level].replace(/0\.\d+\)$/, '0.85)') });
  }
  for (const s of alerts.series) {
    const r = episodes(s.max, alerts.step, gapS);
    if (r.length) out.push({ label: `${s.labels.alertname} (${s.labels.alertstate})`, kind: 'alert', state: s.labels.alertstate, runs: r, color: s.labels.alertstate === 'firing' ? '#f85149' : '#d29922' });
  }
  return out;
}

function timeline(lanesList, d) {
  if (!lanesList.length) return html`<div class="muted">No throttling and no alert about this GPU or its jobs in this range.</div>`;
  const pctOf = (i) => ((i / d.points) * 100).toFixed(2);
  return html`${lanesList.map((l) => html`<div class="lane" data-kind="${l.kind}"><span>${l.kind === 'alert' ? '⚑ ' : ''}${l.label}</span><div class="track">${l.runs.map(([a, b]) => html`<span style="left:${pctOf(a)}%;width:${pctOf(b + 1 - a)}%;background:${l.color}" title="${clock(d.start + a * d.step)}–${clock(d.start + (b + 1) * d.step)}"></span>`)}</div></div>`)}
    <div class="axis"><div></div><div><span>${clock(d.start, true)}</span><span>${clock((d.start + d.end) / 2)}</span><span>${clock(d.end)}</span></div></div>`;
}

function linesFor(spec, data) {
  const out = [];
  spec.lines.forEach((l) => {
    for (const s of data[l.metric]?.series || []) {
      if (l.only && Object.entries(l.only).some(([k, val]) => s.labels[k] !== val)) continue;
      const part = l.split ? (l.names?.[s.labels[l.split]] ?? s.labels[l.split]) : '';
      const label = l.name ? l.name(s.labels) : l.split ? `${l.prefix || ''}${part}${l.suffix || ''}` : l.label;
      out.push({ label, avg: s.avg, min: s.min, max: s.max });
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
    <span>driver <b>${ctx.snapshot.driver_version || '–'}</b></span>${v.jobs.map((j) => html`<span>job <b>${jobLink(j.job_id, j.name || j.job_id)}</b> · team <b>${teamLink(j.team)}</b></span>`)}</div></div>`);
  if (v.lost) {
    render(st.els.kpis, kpi('State', 'lost', 'critical'));
  } else {
    render(st.els.kpis, [
      kpi('Utilization', html`${pct(m.gpu_utilization_ratio)}${v.gpm.smActive === undefined ? '' : html`<small> · SM active ${pct(v.gpm.smActive)}</small>`}`, v.hollow ? 'warning' : ''),
      kpi('Memory', html`${bytes(m.gpu_memory_used_bytes)}<small> / ${bytes(m.gpu_memory_total_bytes)}</small>`),
      kpi('Temperature', html`${celsius(m.gpu_temperature_celsius)}<small> ${v.slowdownC !== undefined ? `/ ${celsius(v.slowdownC)}` : ''}</small>`, tMargin !== undefined && tMargin <= 3 ? 'critical' : tMargin !== undefined && tMargin <= 8 ? 'warning' : ''),
      kpi('Power', html`${watts(m.gpu_power_watts)}<small> / ${watts(m.gpu_power_limit_watts)}</small>`),
      kpi('SM clock', html`${mhz(m.gpu_sm_clock_hertz)}`),
      kpi('Throttling', v.throttles.length ? html`<span class="text">${v.throttles.map((t) => t.label).join(', ')}</span>` : 'none', v.throttles.some((t) => t.level !== 'info') ? 'warning' : ''),
      kpi('ECC corr. / uncorr.', html`${count(v.eccVolatile.corrected)}<small> / </small>${count(v.eccVolatile.uncorrected)}`, v.eccVolatile.uncorrected > 0 ? 'critical' : ''),
      kpi('XID errors', count(v.xids), v.xids ? 'warning' : ''),
    ]);
  }
  // Health problems and the alerts about this GPU or the jobs on it (gpuView): what, and what to do.
  const health = v.health.map((h) => html`<tr data-health="${h.severity}"><td><span class="pill ${h.severity}">${h.severity}</span></td><td>${h.problem}</td><td class="todo">${h.action || '–'}</td><td class="num muted">now</td></tr>`);
  const alerts = [...v.firing, ...v.pending].map((a) => {
    const since = activeSince(a);
    const todo = a.annotations.runbook || a.annotations.description || '';
    return html`<tr data-alert="${a.labels.alertname}"><td><span class="pill ${a.state === 'pending' ? 'pending' : a.labels.severity || a.state}">${a.state === 'pending' ? 'pending' : a.labels.severity || a.state}</span></td>
      <td><a href="${alertHref(a.labels.alertname)}"><b>${a.labels.alertname}</b></a><br><small>${a.annotations.summary}</small><br><small class="muted">${alertSubject(a)}</small></td>
      <td class="todo">${todo.length > 160 ? html`<details><summary>${todo.slice(0, 150).replace(/\s+\S*$/, '')}…</summary><div class="more">${todo}</div></details>` : todo || '–'}</td>
      <td class="num muted">${since ? ago(since, ctx.now) : '–'}</td></tr>`;
  });
  const problems = health.length + alerts.length ? [...health, ...alerts] : html`<tr><td colspan="4" class="muted">No health problem and no alert.</td></tr>`;
  const inMig = v.processes.some((p) => p.gpu_instance_id !== undefined);
  const dash = (x) => (x === undefined || x === null || x === '' ? '–' : x);
  const procs = v.processes.length
    ? v.processes.map((p) => html`<tr data-pid="${p.pid}"><td class="mono">${p.pid}</td><td>${dash(p.name)}</td><td>${dash(p.user)}</td>
      <td class="cmd"><span class="mono" title="${p.command || ''}">${dash(p.command)}</span></td>${inMig ? html`<td>${p.gpu_instance_id ?? '–'}</td>` : ''}
      <td class="num">${bytes(p.memory_bytes)}</td><td class="num">${p.sm_utilization_ratio === undefined ? '–' : pct(p.sm_utilization_ratio)}</td>
      <td class="num">${p.host_cpu_ratio === undefined ? '–' : `${p.host_cpu_ratio.toLocaleString('en-US', { maximumFractionDigits: 2 })} cores`}</td><td class="num">${p.host_memory_bytes === undefined ? '–' : bytes(p.host_memory_bytes)}</td>
      <td>${p.job_id ? jobLink(p.job_id) : '–'}</td></tr>`)
    : html`<tr><td colspan="${inMig ? 10 : 9}" class="muted">No compute process.</td></tr>`;
  const jobs = v.jobs.length
    ? v.jobs.map((j) => html`<tr data-job="${j.job_id}"><td>${jobCell(j)}</td><td>${j.user || '–'}</td><td>${teamLink(j.team)}</td><td class="num">${j.start_time ? duration(ctx.now - j.start_time) : '–'}</td><td class="num">${j.gpu ? `${pct(j.gpu.util_avg)}` : '–'}</td></tr>`)
    : html`<tr><td colspan="5" class="muted">No job holds this GPU.</td></tr>`;
  render(st.els.tables, html`<div class="card problems-card"><div class="scroll-x"><table class="gpu-problems"><thead><tr><th>Severity</th><th>Problem</th><th>What to do</th><th class="num">Since</th></tr></thead><tbody>${problems}</tbody></table></div></div>
    <div class="card"><div class="scroll-x"><table class="gpu-jobs"><thead><tr><th>Job</th><th>User</th><th>Team</th><th class="num">Running</th><th class="num">Util avg</th></tr></thead><tbody>${jobs}</tbody></table></div></div>
    <div class="card"><div class="scroll-x"><table class="gpu-processes"><thead><tr><th>PID</th><th>Name</th><th>User</th><th>Command</th>${inMig ? html`<th>MIG instance</th>` : ''}<th class="num">GPU memory</th><th class="num">SM use</th><th class="num">Host CPU</th><th class="num">Host memory</th><th>Job</th></tr></thead><tbody>${procs}</tbody></table></div></div>
    ${reclaimCard(st.reclaim, ctx.now, { what: 'this GPU' })}`);
  renderProfiling(v);
  renderDatacenter(v);
}

function gauge(label, ratio, { level = '', title = '' } = {}) {
  const w = ratio === undefined ? 0 : Math.max(0, Math.min(1, ratio)) * 100;
  return html`<div class="gauge ${ratio === undefined ? 'absent' : ''}" title="${title}"><span class="name">${label}</span><span class="bar"><span class="${level}" style="width:${w.toFixed(1)}%"></span></span><span class="val">${pct(ratio)}</span></div>`;
}

// The profiling signals next to utilization: what SM active means, a warning when the GPU is busy
// but hollow, and every GPM signal the GPU reports (the main four always, "–" when absent; the
// pipes only where present).
function renderProfiling(v) {
  const el = st.els.gpm;
  if (v.lost) { render(el, ''); el.hidden = true; return; }
  el.hidden = false;
  const explain = html`<p class="why">Utilization counts time any kernel ran; SM active says how much of the chip worked.</p>`;
  if (!v.gpmSupported && Object.values(v.gpm).every((x) => x === undefined)) {
    el.dataset.gpm = 'none';
    render(el, html`<header><h3>Compute activity</h3></header>${explain}<p class="muted">This GPU reports no profiling counters (NVML GPM needs a Hopper or newer GPU and a driver that has it): SM activity cannot be shown.</p>`);
    return;
  }
  el.dataset.gpm = 'yes';
  const util = v.m.gpu_utilization_ratio;
  const warn = v.hollow
    ? html`<div class="hollow" role="alert"><b>Busy but hollow:</b> utilization ${pct(util)} but SM active only ${pct(v.gpm.smActive)}. Kernels run all the time on few SMs — launch-bound code, batches too small, or a starved input pipeline.</div>`
    : '';
  const main = [
    gauge('Utilization', util, { title: 'time any kernel ran' }),
    gauge('SM active', v.gpm.smActive, { level: v.hollow ? 'warning' : '', title: 'share of SMs busy' }),
    gauge('SM occupancy', v.gpm.smOccupancy, { title: 'resident warps / maximum' }),
    gauge('Tensor active', v.gpm.tensor),
    gauge('DRAM active', v.gpm.dram, { title: 'share of the memory bandwidth used' }),
  ];
  const pipes = GPM_SIGNALS.filter(([key]) => !['smActive', 'smOccupancy', 'tensor', 'dram'].includes(key) && v.gpm[key] !== undefined)
    .map(([key, , , label]) => gauge(label, v.gpm[key]));
  render(el, html`<header><h3>Compute activity</h3><small class="muted">profiling counters (GPM) · busy but hollow: utilization ≥ ${pct(HOLLOW_UTILIZATION)}, SM active &lt; ${pct(HOLLOW_SM_ACTIVE)}</small></header>
    ${explain}${warn}<div class="gauges">${main}${pipes}</div>`);
}

const MIG_STATE = (x) => (x === 1 ? 'on' : x === 0 ? 'off' : '–');

function migCard(v) {
  if (v.migCurrent !== 1 && v.migPending !== 1 && !v.mig.length) return '';
  const change = v.migPending !== undefined && v.migPending !== v.migCurrent
    ? html`<span class="chip warning" data-mig-pending="${MIG_STATE(v.migPending)}">${MIG_STATE(v.migPending)} after the next GPU reset</span>` : '';
  const rows = v.mig.length
    ? v.mig.map((i) => {
      const used = i.memory_used_bytes;
      const total = i.memory_total_bytes;
      const ratio = used !== undefined && total ? used / total : undefined;
      const sm = i.metrics?.gpu_mig_sm_active_ratio;
      const procs = (i.processes || []).map((p) => `${p.pid}${p.memory_bytes === undefined ? '' : ` (${bytes(p.memory_bytes)})`}`).join(', ');
      return html`<tr data-mig="${i.gpu_instance_id}"><td class="num id">${i.gpu_instance_id}</td><td class="profile"><b>${i.profile || '–'}</b>${i.slice_ratio === undefined ? '' : html` <small class="share">${pct(i.slice_ratio)} of the GPU</small>`}<small class="mono uuid-inline">${i.uuid}</small></td>
        <td class="mono uuid">${i.uuid}</td>
        <td class="mem"><span class="bar"><span style="width:${((ratio || 0) * 100).toFixed(1)}%"></span></span><small>${bytes(used)} / ${bytes(total)}</small></td>
        <td class="procs">${procs || html`<span class="muted">none</span>`}</td><td class="num sm">${pct(sm)}</td></tr>`;
    })
    : html`<tr><td colspan="6" class="muted">MIG is on but no instance is configured.</td></tr>`;
  return html`<section class="card mig scroll-x"><header><h3>MIG instances</h3><span class="pill ${v.migCurrent === 1 ? 'info' : 'ok'}">MIG ${MIG_STATE(v.migCurrent)}</span>${change}</header>
    <table><thead><tr><th class="num">Instance</th><th>Profile</th><th class="uuid">MIG UUID</th><th>Memory</th><th>Processes</th><th class="num">SM active</th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

const NVLINK_ERRORS = [['replay', 'replay'], ['recovery', 'recovery'], ['crc_flit', 'CRC flit'], ['crc_data', 'CRC data'], ['ecc_data', 'ECC data']];

function nvlinkCard(v) {
  const links = v.nvlinks;
  if (!links.length) return '';
  const up = links.filter((l) => l.up === true).length;
  const down = links.filter((l) => l.up === false);
  const level = down.length ? 'critical' : 'ok';
  const linkErrors = (l) => ['replay_errors', 'recovery_errors', 'crc_errors'].reduce((a, k) => a + (l[k] || 0), 0);
  const boxes = links.map((l) => {
    const state = l.up === undefined ? 'unknown' : l.up ? (linkErrors(l) > 0 ? 'errors' : 'up') : 'down';
    const tip = `link ${l.link}: ${state === 'unknown' ? 'state unknown' : l.up ? 'up' : 'DOWN'} · replay ${count(l.replay_errors)}, recovery ${count(l.recovery_errors)}, CRC ${count(l.crc_errors)} · tx ${si(l.tx_bytes_per_second, 'B/s')}, rx ${si(l.rx_bytes_per_second, 'B/s')}`;
    return html`<span class="link ${state}" data-link="${l.link}" title="${tip}">${l.link}</span>`;
  });
  const errors = NVLINK_ERRORS.filter(([type]) => v.nvlinkErrors[type] !== undefined)
    .map(([type, label]) => html`<span class="${v.nvlinkErrors[type] > 0 ? 'bad' : ''}">${label} <b>${count(v.nvlinkErrors[type])}</b></span>`);
  const perLink = links.map((l) => html`<tr class="${l.up === false ? 'down' : ''}"><td class="num">${l.link}</td><td>${l.up === undefined ? '–' : l.up ? 'up' : html`<b class="bad">down</b>`}</td>
    <td class="num">${count(l.replay_errors)}</td><td class="num">${count(l.recovery_errors)}</td><td class="num">${count(l.crc_errors)}</td>
    <td class="num">${si(l.tx_bytes_per_second, 'B/s')}</td><td class="num">${si(l.rx_bytes_per_second, 'B/s')}</td></tr>`);
  return html`<section class="card nvlink"><header><h3>NVLink</h3><span class="pill ${level}" data-links-up="${up}">${up} / ${links.length} links up</span></header>
    ${down.length ? html`<div class="downlinks" role="alert">Down: ${down.map((l) => `link ${l.link}`).join(', ')}</div>` : ''}
    <div class="links">${boxes}</div>
    <div class="facts"><span>throughput <b>${si(v.m.gpu_nvlink_transmit_bytes_per_second, 'B/s')}</b> out · <b>${si(v.m.gpu_nvlink_receive_bytes_per_second, 'B/s')}</b> in</span>
    ${errors.length ? html`<span>errors since the driver loaded: ${errors}</span>` : ''}</div>
    <details><summary>Per-link counters</summary><div class="scroll-x"><table><thead><tr><th class="num">Link</th><th>State</th><th class="num">Replay</th><th class="num">Recovery</th><th class="num">CRC</th><th class="num">TX</th><th class="num">RX</th></tr></thead><tbody>${perLink}</tbody></table></div></details></section>`;
}

function renderDatacenter(v) {
  const el = st.els.dc;
  const open = el.querySelector('.nvlink details')?.open;
  const cards = [migCard(v), nvlinkCard(v)].filter((c) => c);
  el.hidden = v.lost || cards.length === 0;
  render(el, v.lost ? '' : cards);
  if (open) el.querySelector('.nvlink details').open = true;
}

async function refreshCharts(ctx) {
  if (!ctx.info.history) {
    render(st.els.timeline, html`<div class="muted">This agent keeps no history: charts need the store (storage.path).</div>`);
    return;
  }
  const token = (st.token = (st.token || 0) + 1);
  const width = st.els.charts.clientWidth > 900 ? (st.els.charts.clientWidth - 16) / 2 : st.els.charts.clientWidth;
  const want = Math.max(60, Math.min(1200, Math.round((width - 70) / 60) * 60));
  const { start, end, step, points } = chartGrid(st.bar.range(ctx.now), want);
  const metrics = [...new Set(CHARTS.flatMap((c) => c.lines.map((l) => l.metric)))];
  const q = { gpu: st.index, start, end, points };
  // The alerts about this GPU and about the jobs holding it (a job's alerts carry no gpu label).
  const holders = new Set((st.view?.jobs || []).map((j) => j.job_id));
  const [throttle, allAlerts, ...results] = await Promise.all([
    chart('gpu_clock_event_active', q), chart('ALERTS', { start, end, points }), ...metrics.map((name) => chart(name, q))]);
  if (!st || token !== st.token) return;  // a newer refresh or another page took over
  const alerts = { ...allAlerts, series: allAlerts.series.filter((s) => s.labels.gpu === st.index || (s.labels.gpu === undefined && holders.has(s.labels.job_id))) };
  st.fetchedAt = ctx.now;
  const data = Object.fromEntries(metrics.map((name, i) => [name, results[i]]));
  const laneList = lanes(throttle, alerts, episodeGap(ctx.info.rule_interval_s));
  render(st.els.timeline, html`<header><h3>Throttling and alerts</h3></header>${timeline(laneList, { start, end, step, points })}`);
  const bands = [];
  for (const l of laneList) {
    if (l.kind === 'alert' && l.state !== 'firing') continue;  // pending ones: timeline only
    const color = l.kind === 'alert' ? ALERT_RGBA[l.state] : LEVEL_RGBA[l.level];
    for (const [from, to] of l.runs) bands.push({ from, to, color, label: l.label });
  }
  const v = st.view;
  for (const c of st.charts) {
    const lines = linesFor(c.spec, data);
    c.chart.el.hidden = lines.length === 0 && c.spec !== CHARTS[0];
    const hl = (c.spec.hlines ? c.spec.hlines(v) : []).filter((h) => h.value !== undefined)
      .map((h) => ({ ...h, label: `${h.label} ${c.spec.format(h.value)}`, color: h.color || '#f85149' }));
    c.chart.set({ start, end, step, points, lines, hlines: hl, bands });
  }
}

function makeCharts() {
  if (st.charts.length) return;
  for (const spec of CHARTS) {
    const c = new TimeChart(st.els.charts, { title: spec.title, format: spec.format, axis: spec.axis, integer: spec.integer, yMin: spec.yMin, yMax: spec.yMax, minSpan: spec.minSpan });
    st.charts.push({ spec, chart: c });
    c.onHover = (i) => st.charts.forEach((o) => o.chart.hover(i));
  }
}

function notFound(ctx) {
  st.charts.forEach((c) => c.chart.destroy());
  st.charts = [];
  const n = ctx.snapshot.gpus.length;
  render(st.els.head, html`<div><a href="#/fleet">← Fleet</a><h1>GPU ${st.index}</h1></div>`);
  render(st.els.kpis, html`<div class="card empty" data-notfound="gpu"><b>No GPU ${st.index} on this node</b>${n ? html`This node has GPUs ${ctx.snapshot.gpus.map((g, i) => html`${i ? ', ' : ''}<a href="#/gpu/${g.index}">${g.index}</a>`)}.` : 'This node lists no GPU.'} Back to the <a href="#/fleet">fleet</a>.</div>`);
  for (const el of [st.els.timeline, st.els.range, st.els.tables, st.els.gpm, st.els.dc, st.els.tablesTitle]) { render(el, ''); el.hidden = true; }
}

export default {
  title: (route) => `GPU ${route.args[0] ?? ''}`,
  mount(root, ctx) {
    root.innerHTML = `<div class="pagehead"></div><div class="kpis detail"></div><section class="gpm card" hidden></section><div class="dc two" hidden></div><div class="range"></div><div class="timeline card" hidden></div>
      <div class="charts"></div><h2 class="tables-title" hidden>Health, jobs and processes</h2><div class="tables"></div>`;
    st = {
      index: ctx.route.args[0] || '0', fetchedAt: -Infinity, charts: [], view: null, reclaim: null, reclaimAt: -Infinity,
      els: { head: root.querySelector('.pagehead'), kpis: root.querySelector('.kpis'), gpm: root.querySelector('.gpm'), dc: root.querySelector('.dc'), timeline: root.querySelector('.timeline'), range: root.querySelector('.range'),
        charts: root.querySelector('.charts'), tables: root.querySelector('.tables'), tablesTitle: root.querySelector('.tables-title') },
    };
    st.bar = rangeToolbar(st.els.range, () => { st.fetchedAt = -Infinity; refreshCharts(ctx); });
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    const g = ctx.snapshot.gpus.find((x) => String(x.index) === st.index);
    if (!g) { notFound(ctx); return; }
    makeCharts();
    st.els.timeline.hidden = false;
    st.els.range.hidden = false;
    st.els.tablesTitle.hidden = false;
    st.els.tables.hidden = false;
    if (ctx.now - st.reclaimAt >= 10 || ctx.now < st.reclaimAt) {
      st.reclaimAt = ctx.now;
      const mine = st;
      const r = await loadReclaim({ gpu: st.index }, 50);
      if (st !== mine) return;
      st.reclaim = r;
    }
    st.view = gpuView(g, ctx.alerts, ctx.jobs);
    renderInfo(st.view, ctx);
    const r = st.bar.range(ctx.now);
    const every = r.live ? Math.max(2, (r.end - r.start) / 360) : Infinity;
    if (ctx.now - st.fetchedAt >= every || ctx.now < st.fetchedAt) await refreshCharts(ctx);
  },
  redraw() { st?.charts.forEach((c) => c.chart.draw()); },
  unmount() { st?.charts.forEach((c) => c.chart.destroy()); st?.bar.destroy(); st = null; },
};
