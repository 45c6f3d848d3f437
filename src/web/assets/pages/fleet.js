// Fleet overview: one tile per GPU (health, utilization, memory, temperature against that GPU's
// own slowdown threshold, power, throttling, busy but hollow, NVLink links down, MIG instances,
// job/team, alerts), problems first in a list above. Under `gpuwarden hub` without a node chosen:
// one tile per node instead (GPUs up, utilization, power, alerts, its agent), linked to #/node/<name>.
import { chart, gpuView, scope } from '../api.js';
import { sparkline } from '../chart.js';
import { bytes, celsius, clock, html, pct, render, severityRank, watts } from '../format.js';
import { gpuHref, jobHref, teamHref } from './links.js';
import { decisionWhat, loadReclaim } from './governance.js';

const SPARK_WINDOW_S = 900;
const SPARK_REFRESH_S = 10;
let els = null;
let spark = { at: 0, byGpu: {} };
let reclaimState = { at: -Infinity, r: null };

const levelOf = (a) => ({ critical: 'critical', warning: 'warning' })[a.labels.severity] || 'info';

function meter(name, ratio, value, { level = '', marker } = {}) {
  const w = Math.max(0, Math.min(1, ratio || 0)) * 100;
  const mark = marker === undefined ? '' : html`<i style="left:${(Math.min(1, marker) * 100).toFixed(1)}%"></i>`;
  return html`<div class="meter"><span class="name">${name}</span><span class="bar"><span class="${level}" style="width:${w.toFixed(1)}%"></span>${mark}</span><span class="val">${value}</span></div>`;
}

function tempMeter(v) {
  const t = v.m.gpu_temperature_celsius;
  if (t === undefined) return '';
  const limit = v.slowdownC || v.gpuMaxC;
  if (!limit) return meter('Temp', t / 100, celsius(t));
  const margin = limit - t;
  const level = margin <= 3 ? 'critical' : margin <= 8 ? 'warning' : '';
  // Scale to the shutdown threshold so the slowdown marker sits inside the bar.
  const top = v.shutdownC || limit + 10;
  return meter('Temp', t / top, html`${celsius(t)} <small>/ ${celsius(limit)}</small>`, { level, marker: limit / top });
}

function tile(v, ctx) {
  const m = v.m;
  const state = { ok: 'OK', warning: 'Warning', critical: 'Critical', lost: 'Lost' }[v.state];
  const job = v.jobs[0];
  const who = job
    ? html`<span title="user ${job.user || '–'}">job <b>${job.name || job.job_id}</b> · team <b>${job.team}</b></span>`
    : v.processes.length ? html`${v.processes.length} process${v.processes.length > 1 ? 'es' : ''} · no job` : html`idle · no job`;
  const memRatio = m.gpu_memory_total_bytes ? m.gpu_memory_used_bytes / m.gpu_memory_total_bytes : 0;
  const powerRatio = m.gpu_power_limit_watts ? m.gpu_power_watts / m.gpu_power_limit_watts : 0;
  const chips = [
    ...v.throttles.map((t) => html`<span class="chip ${t.level}" title="clocks held down">${t.label}</span>`),
    v.eccVolatile.uncorrected > 0 ? html`<span class="chip critical">ECC uncorrectable ×${v.eccVolatile.uncorrected}</span>` : '',
    v.xids > 0 ? html`<span class="chip warning">XID ×${v.xids}</span>` : '',
    v.hollow ? html`<span class="chip warning" data-chip="hollow" title="utilization high, SM active low: few SMs do the work">busy but hollow · SM ${pct(v.gpm.smActive)}</span>` : '',
    v.nvlinks.some((l) => l.up === false) ? html`<span class="chip critical" data-chip="nvlink">NVLink ${v.nvlinks.filter((l) => l.up).length}/${v.nvlinks.length} up</span>` : '',
    v.migCurrent === 1 ? html`<span class="chip info" data-chip="mig">MIG ×${v.mig.length}</span>` : '',
    ...v.pending.map((a) => html`<span class="chip warning" title="pending">${a.labels.alertname} (pending)</span>`),
  ];
  const alerts = [...v.firing]
    .sort((a, b) => (severityRank[b.labels.severity] || 0) - (severityRank[a.labels.severity] || 0))
    .map((a) => html`<div class="alert" data-alert="${a.labels.alertname}"><span class="pill ${levelOf(a)}">${a.labels.severity || 'firing'}</span>${a.labels.alertname}</div>`);
  const body = v.lost
    ? html`<div class="big"><div class="num">lost</div></div><div class="muted">The GPU stopped answering NVML. ${v.health[0] ? v.health[0].action : ''}</div>`
    : html`<div class="big"><div class="num">${Math.round((m.gpu_utilization_ratio || 0) * 100)}<small>% util</small></div><canvas class="spark" data-gpu="${v.index}"></canvas></div>
      ${meter('Memory', memRatio, html`${bytes(m.gpu_memory_used_bytes)} <small>/ ${bytes(m.gpu_memory_total_bytes)}</small>`, { level: memRatio > 0.95 ? 'critical' : memRatio > 0.9 ? 'warning' : '' })}
      ${tempMeter(v)}
      ${m.gpu_power_watts === undefined ? '' : meter('Power', powerRatio, html`${watts(m.gpu_power_watts)} <small>/ ${watts(m.gpu_power_limit_watts)}</small>`, { level: powerRatio > 0.98 ? 'warning' : '' })}`;
  return html`<a class="tile card" href="#/gpu/${v.index}" data-gpu="${v.index}" data-state="${v.state}">
    <div class="head"><span class="idx">GPU ${v.index}</span><span class="pill ${v.state}">${state}</span></div>
    <div class="model">${v.name}</div>
    <div class="who">${who}</div>
    ${body}
    <div class="chips">${chips}</div>
    <div class="alerts">${alerts}</div>
  </a>`;
}

function problems(views, ctx) {
  const rows = [];
  for (const v of views) {
    if (v.lost) rows.push({ level: 'lost', href: gpuHref(v.index), text: `GPU ${v.index} is lost`, detail: v.health.map((h) => h.problem).join('; ') });
  }
  const firing = ctx.alerts.filter((a) => a.state === 'firing')
    .sort((a, b) => (severityRank[b.labels.severity] || 0) - (severityRank[a.labels.severity] || 0));
  for (const a of firing) {
    if (levelOf(a) === 'info') continue;  // on the tiles and the alerts page, not a problem
    const l = a.labels;
    const href = l.gpu !== undefined ? gpuHref(l.gpu) : l.job_id ? jobHref(l.job_id) : l.team ? teamHref(l.team) : undefined;
    rows.push({ level: levelOf(a), href, text: a.annotations.summary || a.labels.alertname, detail: a.labels.alertname });
  }
  for (const v of views) {
    for (const h of v.health) {
      if (h.severity === 'critical' && !v.lost) rows.push({ level: 'critical', href: gpuHref(v.index), text: `GPU ${v.index}: ${h.problem}`, detail: h.action });
    }
  }
  const reclaim = reclaimRow();
  if (!rows.length) {
    const pending = ctx.alerts.filter((a) => a.state === 'pending').length;
    const info = firing.length;
    return html`<div class="row"><span class="pill ok">healthy</span><span class="what">All ${views.length} GPUs answer NVML and no warning or critical alert is firing${info || pending ? html` · <a href="#/alerts">${info ? `${info} informational` : ''}${info && pending ? ', ' : ''}${pending ? `${pending} pending` : ''}</a>` : ''}.</span></div>${reclaim}`;
  }
  return rows.slice(0, 8).map((r) => html`<div class="row"><span class="pill ${r.level}">${r.level}</span>
    <span class="what">${r.href ? html`<a href="${r.href}">${r.text}</a>` : r.text} <small>${r.detail}</small></span></div>`)
    .concat(rows.length > 8 ? [html`<div class="row"><a href="#/alerts">${rows.length - 8} more…</a></div>`] : [], [reclaim]);
}

// The reclaim loop in one line when it has something to say: jobs in their grace period and the
// latest decision, linked to the reclaim page.
function reclaimRow() {
  const d = reclaimState.r?.data;
  if (!d || (!d.decisions.length && !(d.notices || []).length)) return '';
  const last = d.decisions[0];
  const notices = (d.notices || []).length;
  return html`<div class="row reclaim-row"><span class="pill warning">reclaim</span><span class="what"><a href="#/reclaim">${notices ? `${notices} job${notices > 1 ? 's' : ''} noticed idle, in the grace period` : 'No job in a grace period'}${last ? ` · latest decision ${clock(last.time)}: ${decisionWhat(last)} for job ${last.job_name || last.job_id}` : ''}</a></span></div>`;
}

function kpis(views, ctx) {
  const up = views.filter((v) => !v.lost);
  const sum = (f) => up.reduce((a, v) => a + (v.m[f] || 0), 0);
  const util = up.length ? sum('gpu_utilization_ratio') / up.length : 0;
  const firing = ctx.alerts.filter((a) => a.state === 'firing');
  const critical = firing.filter((a) => a.labels.severity === 'critical').length;
  const throttled = up.filter((v) => v.throttles.some((t) => t.level !== 'info')).length;
  const lost = views.length - up.length;
  const busyJobs = new Set(ctx.jobs.map((j) => j.job_id)).size;
  const k = (label, value, level = '') => html`<div class="kpi card ${level}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
  return [
    k('GPUs up', html`${up.length}<small> / ${views.length}</small>`, lost ? 'critical' : 'ok'),
    k('Utilization', pct(util)),
    k('Memory used', html`${bytes(sum('gpu_memory_used_bytes'))}<small> / ${bytes(sum('gpu_memory_total_bytes'))}</small>`),
    k('Power', html`${watts(sum('gpu_power_watts'))}<small> / ${watts(sum('gpu_power_limit_watts'))}</small>`),
    k('Slowed down', throttled, throttled ? 'warning' : ''),
    k('Alerts firing', firing.length, critical ? 'critical' : firing.some((a) => a.labels.severity === 'warning') ? 'warning' : ''),
    k('Jobs running', busyJobs),
  ];
}

async function refreshSparks(ctx) {
  if (!ctx.info.history || ctx.now - spark.at < SPARK_REFRESH_S && spark.at <= ctx.now) return;
  spark.at = ctx.now;
  const d = await chart('gpu_utilization_ratio', { start: ctx.now - SPARK_WINDOW_S, end: ctx.now, points: 90 });
  spark.byGpu = Object.fromEntries(d.series.map((s) => [s.labels.gpu, s.avg]));
}

function drawSparks() {
  if (!els) return;
  const color = getComputedStyle(document.documentElement).getPropertyValue('--accent').trim();
  els.tiles.querySelectorAll('canvas.spark').forEach((c) => sparkline(c, spark.byGpu[c.dataset.gpu] || [], color));
}

// The hub's fleet: one tile per node (snapshot.nodes, hub/views.h).
function nodeTile(n) {
  const lost = n.gpus - n.gpus_up;
  const state = n.gpus === 0 ? 'lost' : lost > 0 || n.alerts_critical ? 'critical' : n.alerts_warning ? 'warning' : 'ok';
  const label = { ok: 'OK', warning: 'Warning', critical: 'Critical', lost: 'No data' }[state];
  const chips = [
    lost > 0 ? html`<span class="chip critical">${lost} GPU${lost > 1 ? 's' : ''} lost</span>` : '',
    n.alerts_critical ? html`<span class="chip critical">${n.alerts_critical} critical</span>` : '',
    n.alerts_warning ? html`<span class="chip warning">${n.alerts_warning} warning</span>` : '',
    n.agent === 'unreachable' ? html`<span class="chip warning" title="processes and reclaim decisions come from the agent">agent unreachable</span>` : '',
  ];
  return html`<a class="tile card node-tile" href="#/node/${encodeURIComponent(n.node)}" data-node="${n.node}" data-state="${state}">
    <div class="head"><span class="idx">${n.node}</span><span class="pill ${state}">${label}</span></div>
    <div class="who">${n.gpus_up}/${n.gpus} GPUs up${n.newest_sample ? html` · data ${clock(n.newest_sample)}` : ''}</div>
    <div class="big"><div class="num">${n.utilization === null ? '–' : Math.round(n.utilization * 100)}<small>% util</small></div></div>
    <div class="who">${n.power_watts === null ? '' : html`power <b>${watts(n.power_watts)}</b>`}</div>
    <div class="chips">${chips}</div>
  </a>`;
}

function fleetOfNodes(ctx) {
  const nodes = ctx.snapshot.nodes || [];
  const sum = (f) => nodes.reduce((a, n) => a + (n[f] || 0), 0);
  const gpus = sum('gpus');
  const up = sum('gpus_up');
  const util = gpus ? nodes.reduce((a, n) => a + (n.utilization || 0) * n.gpus_up, 0) / Math.max(1, up) : 0;
  const firing = ctx.alerts.filter((a) => a.state === 'firing');
  const critical = firing.filter((a) => a.labels.severity === 'critical').length;
  const k = (label, value, level = '') => html`<div class="kpi card ${level}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
  render(els.sub, html`${nodes.length} nodes · ${gpus} GPUs · from the central store`);
  render(els.kpis, [k('Nodes', nodes.length), k('GPUs up', html`${up}<small> / ${gpus}</small>`, up < gpus ? 'critical' : 'ok'),
    k('Utilization', pct(util)), k('Power', watts(sum('power_watts'))),
    k('Alerts firing', firing.length, critical ? 'critical' : firing.length ? 'warning' : ''), k('Jobs running', new Set(ctx.jobs.map((j) => `${j.node}/${j.job_id}`)).size)]);
  const bad = firing.filter((a) => levelOf(a) !== 'info')
    .sort((a, b) => (severityRank[b.labels.severity] || 0) - (severityRank[a.labels.severity] || 0));
  const node = (a) => a.labels[scope.nodeLabel];
  render(els.problems, bad.length
    ? bad.slice(0, 8).map((a) => html`<div class="row"><span class="pill ${levelOf(a)}">${levelOf(a)}</span><span class="what"><a href="#/node/${encodeURIComponent(node(a) || '')}">${node(a) || 'fleet'}</a>${a.labels.gpu !== undefined ? html` · <a href="${gpuHref(a.labels.gpu, node(a))}">GPU ${a.labels.gpu}</a>` : ''} <small>${a.labels.alertname}</small></span></div>`)
    : html`<div class="row"><span class="pill ok">healthy</span><span class="what">No warning or critical alert is firing on the ${nodes.length} nodes · <a href="#/findings">fleet findings</a></span></div>`);
  render(els.tiles, nodes.length ? nodes.map(nodeTile) : html`<div class="card empty"><b>No node in the store</b>The store holds no gpu_up series yet.</div>`);
}

export default {
  title: (route) => (route && route.name === 'node' ? `Node ${route.args[0] || ''}` : 'Fleet'),
  mount(root) {
    root.innerHTML = `<div class="pagehead"><div><h1>Fleet</h1><div class="sub"></div></div></div>
      <div class="kpis"></div><div class="problems card"></div><div class="tiles"></div>`;
    els = { title: root.querySelector('h1'), sub: root.querySelector('.sub'), kpis: root.querySelector('.kpis'), problems: root.querySelector('.problems'), tiles: root.querySelector('.tiles') };
  },
  async update(ctx) {
    const s = ctx.snapshot;
    if (scope.hub) {
      els.title.textContent = s.node ? `Node ${s.node}` : 'Fleet';
      if (!s.node) return fleetOfNodes(ctx);
    }
    const views = s.gpus.map((g) => gpuView(g, ctx.alerts, ctx.jobs));
    render(els.sub, html`${s.node ? html`<a href="#/fleet">fleet</a> › <b>${s.node}</b>${s.agent_reachable === false ? ' (agent unreachable: no processes)' : ''} · ` : ''}${views.length} GPUs · driver ${s.driver_version || '–'} · CUDA ${s.cuda_driver_version || '–'} · NVML ${s.nvml_version || '–'}`);
    render(els.kpis, kpis(views, ctx));
    render(els.problems, problems(views, ctx));
    if (ctx.now - reclaimState.at >= 10 || ctx.now < reclaimState.at) {
      // Not waited for: the reclaim line joins the problems when its answer comes.
      reclaimState.at = ctx.now;
      loadReclaim({}, 1).then((r) => {
        reclaimState.r = r;
        if (els && r.data && (r.data.decisions.length || (r.data.notices || []).length)) render(els.problems, problems(views, ctx));
      });
    }
    if (!views.length) {
      render(els.tiles, html`<div class="card empty"><b>No GPU on this node</b>${s.nvml_up ? 'NVML answered but listed no device.' : s.nvml_error}</div>`);
      return;
    }
    render(els.tiles, views.map((v) => tile(v, ctx)));
    drawSparks();
    await refreshSparks(ctx);
    drawSparks();
  },
  redraw() { if (els) drawSparks(); },
  unmount() { els = null; spark = { at: 0, byGpu: {} }; reclaimState = { at: -Infinity, r: null }; },
};
