// Teams: GPUs each team holds now (gpu_allocation_info and the running jobs), what they got out
// of them (utilization, idle ratio, GPU-hours, energy over the jobs on record), their quotas (GPUs
// held at once and GPU-hours per period) and their cost and idle cost (/api/gw/v1/teams, with its
// currency); each team links to its page.
// Below, the services (/api/gw/v1/services): what each scraped application target's GPUs cost
// and what one output (request, token, ...) cost over the last hour. That request is not waited
// for: the teams paint first, the services table fills in when its answer comes.
import { getJson, scrape } from '../api.js';
import { count, duration, html, money, plural, render } from '../format.js';
import { gpuList, period, teamLink } from './links.js';
import { quotaBar } from './team.js';

const REFRESH_S = 10;
let st = null;

function byTeam(rows) {
  const out = {};
  for (const r of rows) out[r.labels.team || 'unassigned'] = (out[r.labels.team || 'unassigned'] || 0) + r.value;
  return out;
}

function summarize(jobs, allocated, quota, snapshot) {
  const teams = {};
  const t = (name) => (teams[name] ||= { name, held: 0, running: 0, idleNow: 0, utilNow: [], gpuHours: 0, idleHours: 0, energyKwh: 0, finished: 0 });
  const utilOf = Object.fromEntries(snapshot.gpus.map((g) => [g.index, g.metrics.gpu_utilization_ratio]));
  for (const j of jobs) {
    const e = t(j.team || 'unassigned');
    const s = j.gpu;
    if (s) {
      e.gpuHours += s.gpu_seconds / 3600;
      e.idleHours += s.idle_gpu_seconds / 3600;
      e.energyKwh += s.energy_j / 3.6e6;
    }
    if (j.state === 'RUNNING') {
      e.running++;
      for (const g of s?.gpus || []) if (utilOf[g] !== undefined) e.utilNow.push(utilOf[g]);
      if (s?.idle_while_allocated) e.idleNow += s.gpus.length;
      e.held += s?.gpus.length || 0;
    } else {
      e.finished++;
    }
  }
  for (const [name, n] of Object.entries(allocated)) t(name).held = Math.max(t(name).held, n);
  for (const name of Object.keys(quota)) t(name);
  return Object.values(teams).sort((a, b) => b.held - a.held || b.gpuHours - a.gpuHours);
}

function draw(ctx) {
  const gov = st.gov?.data;
  const byName = Object.fromEntries((gov?.teams || []).map((t) => [t.team, t]));
  for (const t of gov?.teams || []) if (t.quota?.gpus && st.quota[t.team] === undefined) st.quota[t.team] = t.quota.gpus;
  const teams = summarize(st.jobs, st.allocated, st.quota, ctx.snapshot);
  for (const name of Object.keys(byName)) if (!teams.find((t) => t.name === name)) teams.push(summarize([], { [name]: 0 }, {}, ctx.snapshot)[0]);
  const currency = gov?.currency;
  const hasQuota = Object.keys(st.quota).length > 0 || (gov?.teams || []).some((t) => t.quota);
  if (!teams.length) {
    render(st.els.body, html`<div class="card empty"><b>No team has used a GPU on this agent yet</b>Teams come from teams.accounts / teams.users in the configuration, or from GPUWARDEN_TEAM in a job's environment.</div>`);
    return;
  }
  const rows = teams.map((e) => {
    const g = byName[e.name];
    const util = e.utilNow.length ? e.utilNow.reduce((a, b) => a + b, 0) / e.utilNow.length : undefined;
    const idle = e.gpuHours > 0 ? e.idleHours / e.gpuHours : undefined;
    const quota = st.quota[e.name];
    const q = g?.quota;
    const held = g ? Math.max(e.held, g.allocated_gpus) : e.held;
    const over = (quota !== undefined && held > quota) || Boolean(q?.over_quota);
    const quotaCells = !hasQuota ? '' : html`<td class="quota">${quota === undefined ? html`<span class="muted">–</span>` : quotaBar(held, quota, `${count(held)} / ${count(quota)} GPUs`)}</td>
      <td class="quota">${q?.gpu_hours ? quotaBar(q.period_allocated_gpu_hours, q.gpu_hours, `${q.period_allocated_gpu_hours.toFixed(1)} / ${count(q.gpu_hours)} GPU-h per ${period(q.period_s)}`) : html`<span class="muted">–</span>`}</td>`;
    return html`<tr data-team="${e.name}" data-over="${over}" class="${over ? 'over-quota' : ''}"><td>${teamLink(e.name)}${over ? html` <span class="chip critical">over quota</span>` : ''}</td><td class="num">${held}</td>${quotaCells}<td class="num">${e.running}</td>
      <td class="num">${util === undefined ? '–' : `${Math.round(util * 100)} %`}</td>
      <td class="num">${e.idleNow ? html`<span class="chip warning">${e.idleNow} idle</span>` : '0'}</td>
      <td class="num">${e.gpuHours.toFixed(1)}</td><td class="num">${idle === undefined ? '–' : `${Math.round(idle * 100)} %`}</td>
      <td class="num">${e.energyKwh.toFixed(2)}</td><td class="num">${e.finished}</td>
      <td class="num cost">${g && currency ? money(g.cost.total_cost, currency) : '–'}</td><td class="num idle-cost">${g && currency ? money(g.cost.idle_allocated_cost, currency) : '–'}</td></tr>`;
  });
  const head = ['Team', 'GPUs held ', ...(hasQuota ? ['GPU quota', 'GPU-hour quota'] : []), 'Jobs running ', 'Util now ', 'Idle now ', 'GPU-hours ', 'Idle ratio ', 'Energy kWh ', 'Jobs finished ', 'Cost ', 'Idle cost '];
  render(st.els.body, html`<div class="card"><div class="scroll-x"><table class="teams-table"><thead><tr>${head.map((h) => html`<th class="${h.endsWith(' ') ? 'num' : ''}">${h.trim()}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div></div>
    <p class="muted">${gov?.cost_unavailable ? html`<b class="cost-unavailable">No cost: ${gov.cost_unavailable}.</b> ` : ''}GPU-hours, idle ratio and energy add up the jobs on record (running and finished); cost and idle cost are the agent's running totals${currency ? ` in ${currency}` : ''} (governance.prices). ${hasQuota ? '' : 'No quota is configured (governance.quotas). '}Reclaim notices and decisions: <a href="#/reclaim">reclaim</a>.</p>`);
}

// Why a service has no cost per output now: what is missing, in the operator's words.
function noFigureReason(s) {
  if (!s.gpus.length) return 'no GPUs configured (scrape.targets[].gpus): nothing to cost';
  if (!s.outputs_selector) return 'no outputs configured (scrape.targets[].outputs)';
  if (s.outputs === null) return 'outputs not counted yet: no successful scrape';
  return `no ${plural(s.output_unit)} in the last ${duration(s.window.seconds)}`;
}

function serviceRow(s, currency) {
  const units = plural(s.output_unit);
  const perSecond = s.window.outputs !== null && s.window.seconds > 0 ? s.window.outputs / s.window.seconds : undefined;
  const per1k = s.cost_per_1k_outputs;
  return html`<tr data-target="${s.target}" data-cost="${s.cost}" data-cost-per-1k="${per1k === null ? '' : per1k}">
    <td><b>${s.target}</b>${s.outputs_selector ? html`<br><small class="mono">${s.outputs_selector}</small>` : ''}</td>
    <td>${gpuList(s.gpus)}</td>
    <td class="num cost">${money(s.cost, currency)}<br><small>${s.gpu_hours.toFixed(2)} GPU-h · ${s.energy_kwh.toFixed(2)} kWh</small></td>
    <td class="num outputs">${s.outputs === null ? '–' : html`${count(s.outputs)} <small>${units}</small>`}</td>
    <td class="num">${perSecond === undefined ? '–' : perSecond.toLocaleString('en-US', { maximumFractionDigits: 1 })}</td>
    <td class="num per1k">${per1k === null ? html`— <small class="muted">${noFigureReason(s)}</small>`
    : html`<b>${money(per1k, currency)}</b> <small>/ 1k ${units}</small><br><small>over ${duration(s.window.seconds)}</small>`}</td></tr>`;
}

function drawServices() {
  const r = st.services;
  let content;
  if (!r) {
    content = html`<p class="muted">Reading the services…</p>`;
  } else if (r.missing) {
    content = html`<p class="muted services-none">This agent has no services API (/api/gw/v1/services).</p>`;
  } else if (r.error) {
    content = html`<p class="muted services-none">The services could not be read: ${r.error}</p>`;
  } else if (!r.data.services.length) {
    content = html`<p class="muted services-none">No service is configured: cost per output needs a scrape target with <code>gpus</code> and <code>outputs</code> (scrape.targets in the configuration).</p>`;
  } else {
    const d = r.data;
    const head = ['Target', 'GPUs', 'Cost so far ', 'Outputs ', 'Outputs/s ', `Cost per 1k outputs (last ${d.window_seconds === 3600 ? 'hour' : duration(d.window_seconds)}) `];
    content = html`<div class="card"><div class="scroll-x"><table><thead><tr>${head.map((h) => html`<th class="${h.endsWith(' ') ? 'num' : ''}">${h.trim()}</th>`)}</tr></thead>
      <tbody>${d.services.map((s) => serviceRow(s, d.currency))}</tbody></table></div></div>
      <p class="muted">Cost: the allocation and energy of each target's GPUs (governance.prices, ${d.currency}), kept across restarts; outputs as the target counts them (scrape.targets[].outputs).</p>`;
  }
  render(st.els.services, content);
}

// Starts reading the services unless a read is under way; draws them when the answer comes.
function loadServices(now) {
  const mine = st;
  if (mine.servicesLoading) return;
  mine.servicesLoading = true;
  getJson('/api/gw/v1/services').then((r) => {
    mine.servicesLoading = false;
    if (st !== mine) return;
    mine.services = r;
    mine.servicesAt = now;
    drawServices();
  });
}

export default {
  title: () => 'Teams',
  mount(root) {
    root.innerHTML = `<div class="pagehead"><div><h1>Teams</h1><div class="sub">GPU usage by team: held now, used well, quota and cost</div></div></div><div class="body"></div>
      <h2>Services</h2><div class="services"></div>`;
    st = { at: -Infinity, jobs: [], allocated: {}, quota: {}, gov: null, services: null, servicesAt: -Infinity, servicesLoading: false,
      els: { body: root.querySelector('.body'), services: root.querySelector('.services') } };
    drawServices();
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    if (ctx.now - st.servicesAt >= REFRESH_S || ctx.now < st.servicesAt) loadServices(ctx.now);
    if (ctx.now - st.at >= REFRESH_S || ctx.now < st.at || st.at === -Infinity) {
      const at = ctx.now;
      const [jobs, series, gov] = await Promise.all([
        getJson('/api/gw/v1/jobs?since=7d'),
        scrape((n) => n === 'gpu_allocation_info' || n === 'gpu_team_quota_gpus'),
        getJson('/api/gw/v1/teams'),
      ]);
      if (!st) return;
      st.at = at;
      st.gov = gov;
      st.jobs = jobs.data ? jobs.data.jobs : ctx.jobs;
      st.allocated = byTeam(series.filter((s) => s.name === 'gpu_allocation_info'));
      st.quota = byTeam(series.filter((s) => s.name === 'gpu_team_quota_gpus'));
    }
    draw(ctx);
  },
  unmount() { st = null; },
};
