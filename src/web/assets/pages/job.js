// One job (#/job/<id>): its GPUs' charts over the job's lifetime, its statistics, efficiency,
// cost and queue wait, the alerts and findings about it, its reclaim history, and — when the
// record has them — its outcome {outcome, cause, summary, evidence} and training throughput.
// Data: GET /api/gw/v1/jobs/<id> (running or recorded), /api/gw/v1/chart per metric,
// /api/gw/v1/findings?job=, /api/gw/v1/reclaim?job=.
import { chart, getJson } from '../api.js';
import { TimeChart } from '../chart.js';
import { bytes, celsius, clock, duration, esc, html, money, pct, plural, render, watts } from '../format.js';
import { activeSince, alertHref, gpuList, gpuLink, jobHref, teamLink } from './links.js';
import { findingCard } from './findings.js';
import { loadReclaim, reclaimCard } from './governance.js';
import { hashQuery, rangeFromQuery, rangeLabel } from '../timerange.js';

const REFRESH_S = 10;
const COLORS = ['#4493f8', '#f0883e', '#3fb950', '#bc8cff', '#e3b341', '#39c5cf', '#ff7b72', '#8b949e'];
const CHARTS = [
  { title: 'Utilization', metric: 'gpu_utilization_ratio', format: (v) => pct(v), yMin: 0, yMax: 1 },
  { title: 'SM active', metric: 'gpu_sm_active_ratio', format: (v) => pct(v), yMin: 0, yMax: 1 },
  { title: 'Memory in use', metric: 'gpu_memory_used_bytes', format: bytes, yMin: 0 },
  { title: 'Power', metric: 'gpu_power_watts', format: watts, yMin: 0 },
  { title: 'Temperature', metric: 'gpu_temperature_celsius', format: celsius },
];
let st = null;

const isSet = (t) => t !== undefined && t !== null && t > 0;

export function stateLevel(state) {
  if (['RUNNING', 'COMPLETED', 'ENDED'].includes(state)) return 'ok';
  if (['PENDING', 'CANCELLED', 'PREEMPTED', 'VANISHED'].includes(state)) return 'warning';
  return 'critical';
}

const OUTCOME_LEVEL = { completed: 'ok', cancelled: 'warning', preempted: 'warning', reclaimed: 'warning', vanished: 'warning' };

function outcomeCard(o) {
  if (!o) return '';
  return html`<section class="card outcome" data-outcome="${o.outcome}" data-cause="${o.cause}"><header><h3>Outcome</h3></header>
    <p><span class="pill ${OUTCOME_LEVEL[o.outcome] || 'critical'}">${o.outcome.replace(/_/g, ' ')}</span> cause <b>${o.cause.replace(/_/g, ' ')}</b> — ${o.summary}</p>
    ${(o.evidence || []).length ? html`<ul class="evidence-list">${o.evidence.map((e) => html`<li><span class="muted">${clock(e.time, true)}</span> ${e.gpu !== undefined ? html`${gpuLink(e.gpu)} · ` : ''}<b>${e.kind}</b>${e.value !== undefined && e.value !== null ? ` ${e.value}` : ''} — ${e.detail}</li>`)}</ul>` : ''}
</section>`;
}

function throughputCard(t, currency) {
  if (!t) return '';
  const units = plural(t.unit);
  const n = (v, d = 2) => (v === undefined || v === null ? '–' : Number(v).toLocaleString('en-US', { maximumFractionDigits: d }));
  return html`<section class="card throughput"><header><h3>Throughput</h3><small class="muted mono">${t.metric}</small></header>
    <div class="facts"><span>total <b>${n(t.total, 0)} ${units}</b></span><span>average <b>${n(t.avg_per_s)} ${units}/s</b></span>
    ${t.per_gpu_hour !== undefined ? html`<span>per GPU-hour <b>${n(t.per_gpu_hour, 0)} ${units}</b></span>` : ''}
    ${t.per_kwh !== undefined ? html`<span>per kWh <b>${n(t.per_kwh, 0)} ${units}</b></span>` : ''}
    ${t.per_cost !== undefined ? html`<span>per ${currency || 'unit of cost'} <b>${n(t.per_cost, 0)} ${units}</b></span>` : ''}</div></section>`;
}

function kpi(label, value, level = '', sub = '') {
  return html`<div class="kpi card ${level}"><div class="label">${label}</div><div class="value">${value}</div>${sub ? html`<div class="sub">${sub}</div>` : ''}</div>`;
}

function alertsTable(list, now, gpus) {
  return html`<div class="scroll-x"><table class="job-alerts"><thead><tr><th>Severity</th><th>Alert</th><th>GPU</th><th class="num">Active for</th></tr></thead><tbody>
    ${list.length ? list.map((a) => html`<tr data-alert="${a.labels.alertname}"><td><span class="pill ${a.state === 'pending' ? 'pending' : a.labels.severity}">${a.labels.severity || a.state}</span></td>
      <td><a href="${alertHref(a.labels.alertname)}">${a.labels.alertname}</a><br><small>${a.annotations.summary || ''}</small></td><td>${a.labels.gpu !== undefined ? gpuLink(a.labels.gpu) : gpuList(gpus)}</td>
      <td class="num">${activeSince(a) ? duration(now - activeSince(a)) : '–'}</td></tr>`) : html`<tr><td colspan="4" class="muted">No alert is active about this job or its GPUs.</td></tr>`}</tbody></table></div>`;
}

function draw(ctx) {
  const r = st.rec;
  if (r.missing || r.error) {
    const id = st.id;
    render(st.els.head, html`<div><a href="#/jobs">← Jobs</a><h1>Job ${id}</h1></div>`);
    render(st.els.body, html`<div class="card empty" data-notfound="job"><b>No job “${id}” on record</b>${r.error ? r.error : 'Neither running on this node nor in its job records.'} See the <a href="#/jobs">jobs</a> for the ones it knows.</div>`);
    st.els.box.hidden = true;
    return;
  }
  const j = r.data;
  const g = j.gpu || {};
  const running = j.state === 'RUNNING';
  const now = ctx.now;
  const ranFor = isSet(j.start_time) ? (isSet(j.end_time) && !running ? j.end_time - j.start_time : now - j.start_time) : undefined;
  const idle = g.gpu_seconds > 0 ? g.idle_gpu_seconds / g.gpu_seconds : undefined;
  const cost = j.cost;
  const currency = cost?.currency;
  const gpus = g.gpus || [];
  render(st.els.head, html`<div><a href="#/jobs">← Jobs</a><h1>${j.name || j.job_id} <span class="pill ${stateLevel(j.state)}">${j.state}</span></h1>
    <div class="ident"><span>job <b class="mono">${j.job_id}</b></span><span>user <b>${j.user || '–'}</b></span><span>team <b>${teamLink(j.team)}</b></span>
    <span>partition <b>${j.partition || '–'}</b></span><span>source <b>${j.source || '–'}</b></span><span>GPUs <b class="gpus">${gpuList(gpus, j.node)}</b></span>
    ${j.exit_code !== undefined ? html`<span>exit <b>${j.exit_code}</b></span>` : ''}</div></div>`);
  render(st.els.kpis, [
    kpi(running ? 'Running for' : 'Ran', duration(ranFor), '', isSet(j.start_time) ? `from ${clock(j.start_time, true)}${!running && isSet(j.end_time) ? ` to ${clock(j.end_time)}` : ''}` : ''),
    kpi('Queue wait', j.queue_wait_s === undefined || j.queue_wait_s === null ? '–' : duration(j.queue_wait_s), '', isSet(j.submit_time) ? `submitted ${clock(j.submit_time, true)}` : ''),
    kpi('Util avg / max', j.gpu ? html`${pct(g.util_avg)}<small> / ${pct(g.util_max)}</small>` : '–'),
    kpi('SM active avg', g.sm_active_avg === undefined ? '–' : pct(g.sm_active_avg)),
    kpi('Idle share', idle === undefined ? '–' : pct(idle), idle > 0.5 ? 'warning' : '', g.idle_while_allocated ? 'idle now' : ''),
    kpi('GPU-hours', j.gpu ? (g.gpu_seconds / 3600).toFixed(2) : '–', '', j.gpu ? `energy ${(g.energy_j / 3.6e6).toFixed(2)} kWh` : ''),
    kpi('Cost', cost ? money(cost.total_cost, currency) : '–', '', cost ? html`idle ${money(cost.idle_allocated_cost, currency)} · energy ${money(cost.energy_cost, currency)}` : 'no prices (governance.prices)'),
    kpi('Memory peak', j.gpu ? bytes(g.memory_peak_bytes) : '–', '', j.gpu ? `ECC uncorr. ${g.ecc_uncorrected ?? 0} · XID ${g.xid_count ?? 0}` : ''),
  ]);
  const mine = ctx.alerts.filter((a) => a.labels.job_id === j.job_id || (running && a.labels.gpu !== undefined && gpus.includes(Number(a.labels.gpu))));
  const findings = (st.findings?.data?.findings || []).filter((f) => f.active !== false);
  render(st.els.body, html`${outcomeCard(j.outcome)}${throughputCard(j.throughput, currency)}
    <div class="two"><section class="card"><header><h3>Alerts</h3></header>${alertsTable(mine, now, gpus)}</section>
    <section class="card job-findings"><header><h3>Findings</h3><small class="muted"><a href="#/findings">every finding</a></small></header>
      ${st.findings?.missing ? html`<p class="muted">This agent has no findings service.</p>` : findings.length ? findings.map((f) => findingCard(f, now)) : html`<p class="muted">No finding about this job.</p>`}</section></div>
    ${reclaimCard(st.reclaim, now, { what: 'this job', showJob: false })}
    ${j.state_reason ? html`<p class="muted">Scheduler reason: ${j.state_reason}</p>` : ''}`);
}

async function refreshCharts(ctx) {
  const j = st.rec?.data;
  if (!j || !ctx.info.history) { st.els.box.hidden = true; return; }
  const gpus = (j.gpu?.gpus || []).map(String);
  if (!gpus.length || !isSet(j.start_time)) { st.els.box.hidden = true; return; }
  st.els.box.hidden = false;
  const running = j.state === 'RUNNING';
  // The job's lifetime, unless the URL names a span (from/to: a chart's drag-to-zoom).
  let start = j.start_time;
  let end = running || !isSet(j.end_time) ? ctx.now : j.end_time;
  const q = hashQuery();
  let zoomed = false;
  if (q.has('from') && q.has('to')) {
    const r = rangeFromQuery(q, ctx.now);
    if (!r.error) ({ start, end } = r);
    zoomed = !r.error;
  }
  st.els.box.querySelector('h2').innerHTML = zoomed
    ? `Its GPUs, ${esc(rangeLabel(start, end))} <small><a href="${jobHref(j.job_id)}">its whole lifetime</a></small>` : 'Its GPUs over its lifetime';
  if (end - start < 300) start = end - 300;  // a short job: at least five minutes drawn
  const points = 240;
  const step = (end - start) / points;
  end = start + step * points;
  const results = await Promise.all(CHARTS.map((c) => chart(c.metric, { start, end, points })));
  if (!st) return;
  st.chartsAt = ctx.now;
  CHARTS.forEach((c, i) => {
    const lines = results[i].series.filter((s) => gpus.includes(s.labels.gpu) && s.labels.mig_instance === undefined)
      .map((s, k) => ({ label: `GPU ${s.labels.gpu}`, avg: s.avg, min: s.min, max: s.max, color: COLORS[k % COLORS.length] }));
    st.charts[i].set({ start, end, step, points, lines });
  });
}

export default {
  title: (route) => `Job ${route.args[0] ?? ''}`,
  mount(root, ctx) {
    root.innerHTML = `<div class="pagehead"></div><div class="kpis detail"></div><div class="chartsbox"><h2>Its GPUs over its lifetime</h2><div class="charts job-charts"></div></div><div class="body job-body"></div>`;
    st = { id: ctx.route.args[0] || '', at: -Infinity, chartsAt: -Infinity, rec: null, findings: null, reclaim: null, charts: [],
      els: { head: root.querySelector('.pagehead'), kpis: root.querySelector('.kpis'), charts: root.querySelector('.charts'), box: root.querySelector('.chartsbox'), body: root.querySelector('.body') } };
    st.els.box.hidden = true;
    // A chart's drag-to-zoom writes from/to into the URL (timerange.js): draw that span.
    st.onRange = () => refreshCharts(ctx);
    window.addEventListener('gw-range', st.onRange);
    for (const c of CHARTS) {
      const tc = new TimeChart(st.els.charts, { title: c.title, format: c.format, yMin: c.yMin, yMax: c.yMax });
      st.charts.push(tc);
      tc.onHover = (i) => st.charts.forEach((o) => o.hover(i));
    }
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    if (!st.rec || ctx.now - st.at >= REFRESH_S || ctx.now < st.at) {
      st.at = ctx.now;
      const id = encodeURIComponent(st.id);
      const [rec, findings, reclaim] = await Promise.all([
        getJson(`/api/gw/v1/jobs/${id}`), getJson(`/api/gw/v1/findings?job=${id}`), loadReclaim({ job: st.id }, 50)]);
      if (!st) return;
      Object.assign(st, { rec, findings, reclaim });
      draw(ctx);
      const running = rec.data?.state === 'RUNNING';
      if (rec.data && (st.chartsAt === -Infinity || running)) await refreshCharts(ctx);
      return;
    }
    draw(ctx);
  },
  redraw() { st?.charts.forEach((c) => c.draw()); },
  unmount() {
    if (!st) return;
    st.charts.forEach((c) => c.destroy());
    window.removeEventListener('gw-range', st.onRange);
    st = null;
  },
};
