// Jobs: running (with live per-job GPU statistics), queued (Slurm's pending jobs from
// /api/gw/v1/queue, longest wait first, and the wait percentiles of the jobs that started), and
// finished with their statistics and cost, filterable by team and text and sortable by any column
// (both kept in the URL: #/jobs?team=…&q=…&sort=<column>&dir=asc|desc).
import { getJson, histogramQuantile, scrape } from '../api.js';
import { ago, bytes, clock, clockSeconds, count, duration, html, money, pct, render } from '../format.js';
import { gpuList, jobCell, teamLink } from './links.js';
import { stateLevel } from './job.js';

const FULL_REFRESH_S = 10;
let st = null;

function gpuHours(j) { return j.gpu ? j.gpu.gpu_seconds / 3600 : 0; }
function idleRatio(j) { return j.gpu && j.gpu.gpu_seconds > 0 ? j.gpu.idle_gpu_seconds / j.gpu.gpu_seconds : undefined; }
function topThrottle(j) {
  const t = Object.entries(j.gpu?.throttle_s || {}).filter(([r, s]) => s > 0 && r !== 'gpu_idle').sort((a, b) => b[1] - a[1])[0];
  return t ? `${t[0].replace(/_/g, ' ')} ${duration(t[1])}` : '';
}


const costOf = (j) => (j.cost ? j.cost.total_cost : undefined);
const costText = (j) => (j.cost ? money(j.cost.total_cost, j.cost.currency) : '–');

// Columns: [title, sort key (or none), value to sort by]. A title ending in a space is numeric.
const RUNNING_COLUMNS = [
  ['Job', 'job', (j) => j.name || j.job_id], ['User', 'user', (j) => j.user || ''], ['Team', 'team', (j) => j.team], ['Partition', 'partition', (j) => j.partition || ''],
  ['GPUs', 'gpus', (j) => (j.gpu?.gpus || []).length], ['Running ', 'ran', (j) => j.start_time || Infinity, true], ['Util avg / max ', 'util', (j) => j.gpu?.util_avg],
  ['Memory peak ', 'memory', (j) => j.gpu?.memory_peak_bytes], ['Energy ', 'energy', (j) => j.gpu?.energy_j], ['Cost ', 'cost', costOf],
  ['Idle ', 'idle', (j) => idleRatio(j)], ['Slowed by', null]];
const FINISHED_COLUMNS = [
  ['Job', 'job', (j) => j.name || j.job_id], ['User', 'user', (j) => j.user || ''], ['Team', 'team', (j) => j.team], ['State', 'state', (j) => j.state],
  ['Ended ', 'ended', (j) => j.end_time || 0], ['Ran ', 'ran', (j) => (j.start_time ? j.end_time - j.start_time : undefined)], ['Queued ', 'queued', (j) => j.queue_wait_s],
  ['GPU-hours ', 'gpuh', gpuHours], ['Util avg ', 'util', (j) => j.gpu?.util_avg], ['Idle ', 'idle', (j) => idleRatio(j)],
  ['Energy ', 'energy', (j) => j.gpu?.energy_j], ['Cost ', 'cost', costOf], ['ECC / XID ', null]];

function runningRow(j, now) {
  const idle = idleRatio(j);
  // A silent agent's jobs (the hub): the store's at its last answer, so said with that time.
  const source = j.as_of ? `${j.source}, last known ${clockSeconds(j.as_of)}` : j.source;
  return html`<tr data-job="${j.job_id}"><td>${jobCell(j, source)}</td>
    <td>${j.user || '–'}</td><td>${teamLink(j.team)}</td><td>${j.partition || '–'}</td>
    <td>${gpuList(j.gpu?.gpus, j.node)}</td>
    <td class="num">${j.start_time ? duration(now - j.start_time) : '–'}</td>
    <td class="num">${j.gpu ? `${pct(j.gpu.util_avg)} / ${pct(j.gpu.util_max)}` : '–'}</td>
    <td class="num">${j.gpu ? bytes(j.gpu.memory_peak_bytes) : '–'}</td>
    <td class="num">${j.gpu ? `${(j.gpu.energy_j / 3.6e6).toFixed(2)} kWh` : '–'}</td>
    <td class="num cost">${costText(j)}</td>
    <td class="num">${idle === undefined ? '–' : `${Math.round(idle * 100)} %`}${j.gpu?.idle_while_allocated ? html` <span class="chip warning">idle</span>` : ''}</td>
    <td><small>${topThrottle(j)}</small></td></tr>`;
}

function finishedRow(j, now) {
  const idle = idleRatio(j);
  const exit = j.exit_code === undefined ? '' : ` (exit ${j.exit_code})`;
  return html`<tr data-job="${j.job_id}"><td>${jobCell(j)}</td>
    <td>${j.user || '–'}</td><td>${teamLink(j.team)}</td>
    <td><span class="pill ${stateLevel(j.state)}">${j.state}</span><small>${exit}</small>${j.outcome ? html`<br><small>${j.outcome.outcome.replace(/_/g, ' ')}</small>` : ''}</td>
    <td class="num">${ago(j.end_time, now)}</td>
    <td class="num">${j.start_time ? duration(j.end_time - j.start_time) : '–'}</td>
    <td class="num">${j.queue_wait_s === undefined ? '–' : duration(j.queue_wait_s)}</td>
    <td class="num">${gpuHours(j).toFixed(2)}</td>
    <td class="num">${j.gpu ? `${pct(j.gpu.util_avg)}` : '–'}</td>
    <td class="num">${idle === undefined ? '–' : `${Math.round(idle * 100)} %`}</td>
    <td class="num">${j.gpu ? `${(j.gpu.energy_j / 3.6e6).toFixed(2)} kWh` : '–'}</td>
    <td class="num cost">${costText(j)}</td>
    <td class="num">${j.gpu ? `${count(j.gpu.ecc_uncorrected)} / ${count(j.gpu.xid_count)}` : '–'}</td></tr>`;
}

// Slurm's reasons: waiting for its turn is the normal case; a limit is the user's or team's own.
function reasonLevel(reason) {
  if (/^(QOS|Assoc|.*Limit)/.test(reason || '')) return 'warning';
  if (['Resources', 'Priority'].includes(reason)) return 'info';
  return '';
}

// A time the day it happened at as HH:MM, older ones with the date.
function when(t, now) { return t ? clock(t, now - t > 86400) : '–'; }

function queuedRow(j) {
  const eligible = j.eligible ? when(j.eligible_time, j.polled_at) : j.eligible_time ? `from ${when(j.eligible_time, j.polled_at)}` : 'not yet';
  return html`<tr data-job="${j.job_id}" data-wait="${j.wait_s}" data-position="${j.position}">
    <td class="num">${j.position}</td>
    <td><b>${j.name || j.job_id}</b><br><small class="mono">${j.job_id}</small></td>
    <td>${j.user || '–'}</td><td>${teamLink(j.team)}</td><td>${j.partition || '–'}</td>
    <td class="num">${j.gpus}</td>
    <td class="num">${when(j.submit_time, j.polled_at)}</td><td class="num">${eligible}</td>
    <td class="num"><b>${j.eligible ? duration(j.wait_s) : '–'}</b>${j.start_estimate ? html`<br><small>start ≈ ${when(j.start_estimate, j.polled_at)}</small>` : ''}</td>
    <td><span class="chip ${reasonLevel(j.reason)}">${j.reason || '–'}</span></td></tr>`;
}

// The queue's state in one line: how many wait, as of which poll, and whether Slurm answers.
function queueHead(q, shown) {
  const waits = `Queue wait (start − eligible) of the jobs that started: median ${st.waitP50 === undefined ? '–' : duration(st.waitP50)}, 90th percentile ${st.waitP90 === undefined ? '–' : duration(st.waitP90)}.`;
  const stale = q.up ? '' : html` <span class="chip warning">Slurm not answering for ${duration(q.staleness_s)}: the queue as last seen</span>`;
  return html`<p class="queuehead" data-polled-at="${q.polled_at}"><b>${count(shown)} jobs waiting in Slurm's queue</b>${shown !== q.jobs.length ? ` (${count(q.jobs.length)} in all)` : ''} · as of ${clockSeconds(q.polled_at)}${stale}<br><small>${waits}</small></p>`;
}

function drawQueue(keep) {
  const q = st.queue;
  if (!q || q.missing || q.error || q.data?.scheduler === 'none') {
    const why = q?.error ? `The queue could not be read: ${q.error}.` : 'This agent does not poll Slurm (jobs.scheduler), so it sees no queue; jobs are known from their processes.';
    return html`<div class="card empty"><b>No scheduler queue</b>${why}</div>`;
  }
  const d = q.data;
  if (!d.known) return html`<div class="card empty"><b>Slurm has not answered yet</b>${d.error || 'Waiting for the first squeue poll.'}</div>`;
  const jobs = d.jobs.map((j) => ({ ...j, polled_at: d.polled_at })).filter(keep).sort((a, b) => b.wait_s - a.wait_s || a.position - b.position);
  return html`${queueHead(d, jobs.length)}${table(['Position ', 'Job', 'User', 'Team', 'Partition', 'GPUs ', 'Submitted ', 'Eligible ', 'Waiting ', 'Reason'],
    jobs.map(queuedRow), d.jobs.length ? 'No waiting job matches the filter.' : 'No job is waiting in the queue.')}`;
}

function table(head, rows, empty) {
  return html`<div class="card"><div class="scroll-x"><table><thead><tr>${head.map((h) => html`<th class="${h.endsWith(' ') ? 'num' : ''}">${h.trim()}</th>`)}</tr></thead>
    <tbody>${rows.length ? rows : html`<tr><td colspan="${head.length}" class="muted">${empty}</td></tr>`}</tbody></table></div></div>`;
}

// A table whose column headers sort it (the sort is the page's, in the URL).
function sortable(columns, list, row, empty) {
  const col = columns.find((c) => c[1] && c[1] === st.sort);
  const sorted = col ? [...list].sort((a, b) => {
    const x = col[2](a);
    const y = col[2](b);
    const missing = (x === undefined || x === null) - (y === undefined || y === null);
    if (missing) return missing;  // absent values last either way
    const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return (st.dir === 'asc' ? c : -c) * (col[3] ? -1 : 1);
  }) : list;
  const th = (c) => {
    const on = col && c === col;
    const arrow = on ? (st.dir === 'asc' ? ' ▲' : ' ▼') : '';
    return c[1] ? html`<th class="${c[0].endsWith(' ') ? 'num' : ''}" aria-sort="${on ? (st.dir === 'asc' ? 'ascending' : 'descending') : 'none'}"><button type="button" class="sort" data-sort="${c[1]}">${c[0].trim()}${arrow}</button></th>`
      : html`<th class="${c[0].endsWith(' ') ? 'num' : ''}">${c[0].trim()}</th>`;
  };
  return html`<div class="card"><div class="scroll-x"><table><thead><tr>${columns.map(th)}</tr></thead>
    <tbody>${sorted.length ? sorted.map(row) : html`<tr><td colspan="${columns.length}" class="muted">${empty}</td></tr>`}</tbody></table></div></div>`;
}

// The filters and sort in the URL (replaceState: no reload, no history entry per keystroke).
function saveQuery() {
  const p = new URLSearchParams();
  if (st.team) p.set('team', st.team);
  if (st.text) p.set('q', st.text);
  if (st.sort) { p.set('sort', st.sort); p.set('dir', st.dir); }
  const q = p.toString();
  history.replaceState(null, '', `#/jobs${q ? `?${q}` : ''}`);
}

function draw(ctx) {
  const team = st.team;
  const text = st.text.toLowerCase();
  const keep = (j) => (!team || j.team === team) && (!text || `${j.job_id} ${j.name} ${j.user} ${j.team} ${j.partition} ${j.reason || ''}`.toLowerCase().includes(text));
  const running = st.all.filter((j) => j.state === 'RUNNING').filter(keep);
  const finished = st.all.filter((j) => j.state !== 'RUNNING').filter(keep);
  const queued = st.queue?.data?.known ? st.queue.data.jobs : [];
  const teams = [...new Set([...st.all, ...queued].map((j) => j.team))].sort();
  const k = (label, value, level = '') => html`<div class="kpi card ${level}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
  // GPUs by node and index (under the hub a fleet-wide list has GPU 0 of every node); of how
  // many: the node's GPUs, or under the hub's fleet scope every node's.
  const allocated = new Set(running.flatMap((j) => (j.gpu?.gpus || []).map((g) => `${j.node || ''}/${g}`))).size;
  const gpus = ctx.snapshot.nodes ? ctx.snapshot.nodes.reduce((n, x) => n + (x.gpus || 0), 0) : ctx.snapshot.gpus.length;
  const idle = running.filter((j) => j.gpu?.idle_while_allocated).length;
  render(st.els.kpis, [
    k('Running', running.length),
    k('Queued (Slurm)', st.queue?.data?.known ? count(queued.filter(keep).length) : st.slurm ? count(st.pending) : html`<small>no scheduler</small>`),
    // A silent node's GPU series are stale: its count is not known now, its jobs' GPUs are.
    k('GPUs allocated', gpus || !allocated ? html`${allocated}<small> / ${gpus}</small>`
      : html`${allocated}<small title="no GPU series of this scope in the store now (the agent is silent)"> / ?</small>`),
    k('Idle but allocated', idle, idle ? 'warning' : ''),
    k('Finished', finished.length),
    k('Queue wait p90', st.waitP90 === undefined ? '–' : duration(st.waitP90)),
  ]);
  if (!st.filtersDrawn || st.teamsSeen !== teams.join()) {
    st.teamsSeen = teams.join();
    st.filtersDrawn = true;
    render(st.els.filters, html`<select aria-label="team"><option value="">every team</option>${teams.map((t) => html`<option ${t === team ? 'selected' : ''}>${t}</option>`)}</select>
      <input type="search" placeholder="filter jobs, users…" value="${st.text}" aria-label="filter">`);
    st.els.filters.querySelector('select').addEventListener('change', (e) => { st.team = e.target.value; saveQuery(); draw(ctx); });
    st.els.filters.querySelector('input').addEventListener('input', (e) => { st.text = e.target.value; saveQuery(); draw(ctx); });
  }
  render(st.els.running, sortable(RUNNING_COLUMNS, running, (j) => runningRow(j, ctx.now),
    'No job is running on this node. Jobs come from Slurm (jobs.scheduler: slurm) or from processes started with GPUWARDEN_JOB=<name>.'));
  render(st.els.queued, drawQueue(keep));
  // The hub: the nodes whose agents did not answer have no finished jobs here (docs/hub.md).
  const silent = st.unreachable || [];
  render(st.els.finished, html`${sortable(FINISHED_COLUMNS, finished.slice(0, 200), (j) => finishedRow(j, ctx.now), 'No finished job on record.')}${silent.length ? html`<p class="muted agents-unreachable">No records from the agents of ${silent.join(', ')}: they did not answer.</p>` : ''}`);
  for (const b of [...st.els.running.querySelectorAll('button.sort'), ...st.els.finished.querySelectorAll('button.sort')]) {
    b.addEventListener('click', () => {
      st.dir = st.sort === b.dataset.sort && st.dir === 'desc' ? 'asc' : 'desc';
      st.sort = b.dataset.sort;
      saveQuery();
      draw(ctx);
    });
  }
}

export default {
  title: () => 'Jobs',
  mount(root, ctx) {
    root.innerHTML = `<div class="pagehead"><div><h1>Jobs</h1><div class="sub">Who holds the GPUs and what they get out of them</div></div><div class="filters"></div></div>
      <div class="kpis"></div><h2>Running</h2><div class="running"></div><h2>Queued</h2><div class="queued"></div>
      <h2>Finished</h2><div class="finished"></div>`;
    const q = ctx.route.query;
    st = { all: [], at: -Infinity, team: q.get('team') || '', text: q.get('q') || '', sort: q.get('sort') || '', dir: q.get('dir') === 'asc' ? 'asc' : 'desc', slurm: false, pending: 0,
      els: Object.fromEntries(['filters', 'kpis', 'running', 'queued', 'finished'].map((c) => [c, root.querySelector(`.${c}`)])) };
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    if (ctx.now - st.at >= FULL_REFRESH_S || ctx.now < st.at || st.at === -Infinity) {
      const at = ctx.now;
      const [all, queue, series] = await Promise.all([
        getJson('/api/gw/v1/jobs'),
        getJson('/api/gw/v1/queue'),
        scrape((n) => n === 'gpu_jobs' || n === 'gpuwarden_slurm_up' || n === 'gpu_job_queue_wait_seconds_bucket'),
      ]);
      if (!st) return;
      st.at = at;
      st.all = all.data ? all.data.jobs : ctx.jobs;
      st.unreachable = all.data?.nodes_unreachable;
      st.queue = queue;
      st.slurm = series.some((s) => s.name === 'gpuwarden_slurm_up');
      st.pending = series.filter((s) => s.name === 'gpu_jobs' && s.labels.state === 'PENDING').reduce((a, s) => a + s.value, 0);
      // Summed over partitions, bucket by bucket.
      const byLe = {};
      for (const s of series) if (s.name === 'gpu_job_queue_wait_seconds_bucket') byLe[s.labels.le] = (byLe[s.labels.le] || 0) + s.value;
      const buckets = Object.entries(byLe).map(([le, value]) => ({ le, value }));
      st.waitP50 = histogramQuantile(0.5, buckets);
      st.waitP90 = histogramQuantile(0.9, buckets);
    } else {
      // Between full reads the running jobs come with the shared refresh.
      st.all = [...ctx.jobs, ...st.all.filter((j) => j.state !== 'RUNNING')];
    }
    draw(ctx);
  },
  unmount() { st = null; },
};
