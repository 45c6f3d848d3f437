// One team (#/team/<name>): GPUs held against its quota over time, its GPU-hour quota period, its
// cost and idle cost, its jobs (running and ended) with the success rate and outcomes of the ended
// ones, how many of them a GPU fault ended, and their throughput where recorded, the alerts and
// findings about it and its reclaim history. Data: /api/gw/v1/teams, /api/gw/v1/jobs?team=&since=7d, /api/gw/v1/chart,
// /api/gw/v1/findings?team=, /api/gw/v1/reclaim?team=.
import { chart, getJson } from '../api.js';
import { TimeChart } from '../chart.js';
import { count, duration, html, money, pct, plural, render } from '../format.js';
import { activeSince, alertHref, gpuList, gpuLink, jobCell, jobLink, period } from './links.js';
import { rangeToolbar } from '../timerange.js';
import { findingCard } from './findings.js';
import { loadReclaim, reclaimCard } from './governance.js';
import { stateLevel } from './job.js';

const REFRESH_S = 10;
let st = null;

function kpi(label, value, level = '', sub = '') {
  return html`<div class="kpi card ${level}"><div class="label">${label}</div><div class="value">${value}</div>${sub ? html`<div class="sub">${sub}</div>` : ''}</div>`;
}

// A quota bar: `used` of `quota`, red past it.
export function quotaBar(used, quota, text) {
  const over = used > quota;
  const w = quota > 0 ? Math.min(100, (used / quota) * 100) : used > 0 ? 100 : 0;
  return html`<div class="quota-bar ${over ? 'over' : ''}" data-over="${over}" title="${text}"><span class="bar"><span class="${over ? 'critical' : used / Math.max(quota, 1e-9) > 0.9 ? 'warning' : ''}" style="width:${w.toFixed(1)}%"></span></span><span class="val">${text}</span></div>`;
}

function jobRow(j, now, currency) {
  const ended = j.state !== 'RUNNING';
  const ran = j.start_time ? (ended && j.end_time ? j.end_time - j.start_time : now - j.start_time) : undefined;
  const t = j.throughput;
  return html`<tr data-job="${j.job_id}"><td>${jobCell(j)}</td><td>${j.user || '–'}</td>
    <td><span class="pill ${stateLevel(j.state)}">${j.state}</span>${j.outcome ? html`<br><small>${j.outcome.outcome.replace(/_/g, ' ')} · ${j.outcome.cause.replace(/_/g, ' ')}</small>` : ''}</td>
    <td>${gpuList(j.gpu?.gpus, j.node)}</td><td class="num">${duration(ran)}</td><td class="num">${j.gpu ? pct(j.gpu.util_avg) : '–'}</td>
    <td class="num">${j.cost ? money(j.cost.total_cost, j.cost.currency || currency) : '–'}</td>
    <td class="num">${t ? `${Number(t.avg_per_s).toLocaleString('en-US', { maximumFractionDigits: 1 })} ${plural(t.unit)}/s` : '–'}</td></tr>`;
}

function draw(ctx) {
  const name = st.name;
  const gov = st.teams?.data;
  const t = gov?.teams.find((x) => x.team === name);
  const jobs = st.jobs?.data?.jobs || [];
  const currency = gov?.currency;
  const runningCount = jobs.filter((j) => j.state === 'RUNNING').length;
  render(st.els.head, html`<div><a href="#/teams">← Teams</a><h1>Team ${name}${t?.quota?.over_quota ? html` <span class="pill critical">over quota</span>` : ''}</h1>
    <div class="sub">${runningCount} job${runningCount === 1 ? '' : 's'} running · ${jobs.length} on record in the last 7 days</div></div>`);
  st.missing = !t && !jobs.length;
  if (st.missing) {
    render(st.els.kpis, '');
    st.els.box.hidden = true;
    render(st.els.body, html`<div class="card empty" data-notfound="team"><b>No team “${name}” on this agent</b>No job of this team has held a GPU here and it has no quota. See the <a href="#/teams">teams</a>.</div>`);
    return;
  }
  const q = t?.quota;
  const ended = jobs.filter((j) => j.state !== 'RUNNING');
  const withOutcome = ended.filter((j) => j.outcome);
  const completed = withOutcome.filter((j) => j.outcome.outcome === 'completed').length;
  const outcomes = {};
  for (const j of withOutcome) outcomes[j.outcome.outcome] = (outcomes[j.outcome.outcome] || 0) + 1;
  // Failures the GPUs caused (cause gpu_fault), as `gpuwarden report` counts them.
  const gpuCaused = withOutcome.filter((j) => j.outcome.cause === 'gpu_fault').length;
  render(st.els.kpis, [
    kpi('GPUs held', t ? html`${count(t.allocated_gpus)}${q?.gpus ? html`<small> / ${count(q.gpus)} quota</small>` : ''}` : '–', q?.over_quota ? 'critical' : '',
      q?.gpus ? quotaBar(t.allocated_gpus, q.gpus, `${count(t.allocated_gpus)} / ${count(q.gpus)} GPUs`) : 'no GPU quota'),
    kpi('GPU-hours this period', q?.gpu_hours ? html`${q.period_allocated_gpu_hours.toFixed(1)}<small> / ${count(q.gpu_hours)}</small>` : '–', '',
      q?.gpu_hours ? quotaBar(q.period_allocated_gpu_hours, q.gpu_hours, `${q.period_allocated_gpu_hours.toFixed(1)} / ${count(q.gpu_hours)} GPU-h per ${period(q.period_s)}`) : 'no GPU-hour quota'),
    kpi('Cost', t ? money(t.cost.total_cost, currency) : '–', '', t ? `${t.cost.allocated_gpu_hours.toFixed(1)} GPU-h · ${t.cost.energy_kwh.toFixed(1)} kWh` : ''),
    kpi('Idle cost', t ? money(t.cost.idle_allocated_cost, currency) : '–', t && t.idle_ratio > 0.3 ? 'warning' : '', t ? `idle ${pct(t.idle_ratio)} of allocated time` : ''),
    kpi('Efficiency', t ? pct(t.cost.efficiency) : '–', '', 'used / allocated GPU-hours'),
    kpi('Success rate', withOutcome.length ? pct(completed / withOutcome.length) : '–', '', withOutcome.length ? Object.entries(outcomes).map(([o, n]) => `${n} ${o.replace(/_/g, ' ')}`).join(' · ') : `${ended.length} ended, no outcome recorded`),
    kpi('GPU-caused failures', withOutcome.length ? count(gpuCaused) : '–', gpuCaused > 0 ? 'critical' : '', withOutcome.length ? `of ${count(withOutcome.length)} ended: a GPU fault ended them` : ''),
  ]);
  const mine = ctx.alerts.filter((a) => a.labels.team === name);
  const findings = (st.findings?.data?.findings || []).filter((f) => f.active !== false);
  const sorted = [...jobs].sort((a, b) => (b.state === 'RUNNING') - (a.state === 'RUNNING') || (b.end_time || 0) - (a.end_time || 0));
  render(st.els.body, html`<h2>Jobs</h2><div class="card"><div class="scroll-x"><table class="team-jobs"><thead><tr><th>Job</th><th>User</th><th>State / outcome</th><th>GPUs</th><th class="num">Ran</th><th class="num">Util avg</th><th class="num">Cost</th><th class="num">Throughput</th></tr></thead>
    <tbody>${sorted.length ? sorted.slice(0, 200).map((j) => jobRow(j, ctx.now, currency)) : html`<tr><td colspan="8" class="muted">No job of this team on record in the last 7 days.</td></tr>`}</tbody></table></div></div>
    <div class="two"><section class="card"><header><h3>Alerts</h3></header><div class="scroll-x"><table class="team-alerts"><thead><tr><th>Severity</th><th>Alert</th><th>Job / GPU</th><th class="num">Active for</th></tr></thead><tbody>
      ${mine.length ? mine.map((a) => html`<tr data-alert="${a.labels.alertname}"><td><span class="pill ${a.state === 'pending' ? 'pending' : a.labels.severity}">${a.labels.severity || a.state}</span></td><td><a href="${alertHref(a.labels.alertname)}">${a.labels.alertname}</a><br><small>${a.annotations.summary || ''}</small></td>
        <td>${a.labels.job_id ? jobLink(a.labels.job_id) : ''} ${a.labels.gpu !== undefined ? gpuLink(a.labels.gpu) : ''}</td><td class="num">${activeSince(a) ? duration(ctx.now - activeSince(a)) : '–'}</td></tr>`)
    : html`<tr><td colspan="4" class="muted">No alert is active about this team.</td></tr>`}</tbody></table></div></section>
    <section class="card team-findings"><header><h3>Findings</h3></header>${findings.length ? findings.map((f) => findingCard(f, ctx.now)) : html`<p class="muted">No finding about this team.</p>`}</section></div>
    ${reclaimCard(st.reclaim, ctx.now, { what: 'this team' })}`);
}

async function refreshChart(ctx) {
  if (!ctx.info.history || st.missing) { st.els.box.hidden = true; return; }
  // The range in the URL (the toolbar: range=1h…7d, or from/to, a chart's drag-to-zoom).
  const span = st.bar.range(ctx.now);
  const points = 180;
  const step = (span.end - span.start) / points;
  const end = span.live ? Math.ceil(span.end / step) * step : span.end;
  const start = end - step * points;
  const [held, quota, used] = await Promise.all(['gpu_team_allocated_gpus', 'gpu_team_quota_gpus', 'gpu_team_used_gpus'].map((m) => chart(m, { start, end, points })));
  if (!st) return;
  st.chartAt = ctx.now;
  const of = (d) => d.series.find((s) => s.labels.team === st.name);
  const lines = [];
  const h = of(held);
  const u = of(used);
  const q = of(quota);
  if (h) lines.push({ label: 'GPUs held', color: '#4493f8', avg: h.avg, min: h.min, max: h.max });
  if (u) lines.push({ label: 'GPUs used (utilization-weighted)', color: '#3fb950', avg: u.avg, min: u.min, max: u.max });
  if (q) lines.push({ label: 'quota', color: '#f85149', avg: q.avg, min: q.avg, max: q.avg });
  // Buckets where the team held more than its quota, shaded.
  const bands = [];
  if (h && q) h.max.forEach((v, i) => { if (v !== null && q.avg[i] !== null && v > q.avg[i]) bands.push({ from: i, to: i, color: 'rgba(248,81,73,0.16)' }); });
  st.els.box.hidden = false;
  st.chart.set({ start, end, step, points, lines, bands });
}

export default {
  title: (route) => `Team ${route.args[0] ?? ''}`,
  mount(root, ctx) {
    root.innerHTML = `<div class="pagehead"></div><div class="kpis detail"></div><div class="chartsbox"><h2>Usage against quota</h2><div class="range"></div><div class="charts team-charts"></div></div><div class="body team-body"></div>`;
    st = { name: ctx.route.args[0] || '', at: -Infinity, chartAt: -Infinity,
      els: { head: root.querySelector('.pagehead'), kpis: root.querySelector('.kpis'), box: root.querySelector('.chartsbox'), charts: root.querySelector('.charts'), body: root.querySelector('.body') } };
    st.bar = rangeToolbar(root.querySelector('.range'), () => { st.chartAt = -Infinity; refreshChart(ctx); });
    st.chart = new TimeChart(st.els.charts, { title: 'GPUs held, used and quota', format: (v) => v.toLocaleString('en-US', { maximumFractionDigits: 2 }), yMin: 0 });
    st.els.box.hidden = true;
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    if (!st.teams || ctx.now - st.at >= REFRESH_S || ctx.now < st.at) {
      st.at = ctx.now;
      const n = encodeURIComponent(st.name);
      const [teams, jobs, findings, reclaim] = await Promise.all([getJson('/api/gw/v1/teams'), getJson(`/api/gw/v1/jobs?team=${n}&since=7d`),
        getJson(`/api/gw/v1/findings?team=${n}`), loadReclaim({ team: st.name }, 50)]);
      if (!st) return;
      Object.assign(st, { teams, jobs, findings, reclaim });
    }
    draw(ctx);
    const live = st.bar.range(ctx.now).live;
    if (st.chartAt === -Infinity || (live && (ctx.now - st.chartAt >= 30 || ctx.now < st.chartAt))) await refreshChart(ctx);
  },
  redraw() { st?.chart.draw(); },
  unmount() { st?.chart.destroy(); st?.bar.destroy(); st = null; },
};
