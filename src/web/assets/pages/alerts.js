// Alerts: firing and pending now (/api/v1/alerts), their history on a time axis (the ALERTS series
// in the store, downsampled by /api/gw/v1/chart), and the health of the rules that raise them.
import { chart, getJson, scope } from '../api.js';
import { episodeGap, episodes } from '../chart.js';
import { ago, clock, duration, html, render, severityRank } from '../format.js';
import { activeSince, alertSubject } from './links.js';

const RANGES = [['1h', 3600], ['6h', 21600], ['24h', 86400], ['7d', 604800]];
const POINTS = 360;
let st = null;

function alertRow(a, now) {
  const level = a.state === 'pending' ? 'pending' : a.labels.severity === 'critical' ? 'critical' : a.labels.severity === 'info' ? 'info' : 'warning';
  const gpu = a.labels.gpu;
  const open = st?.want && st.want === a.labels.alertname;
  return html`<tr data-alert="${a.labels.alertname}" data-gpu="${gpu || ''}" data-job="${a.labels.job_id || ''}" data-team="${a.labels.team || ''}" class="${open ? 'target' : ''}"><td><span class="pill ${level}">${a.labels.severity || a.state}</span></td>
    <td><details ${open ? 'open' : ''}><summary><b>${a.labels.alertname}</b> — ${a.annotations.summary || ''}</summary>
      <div class="more">${a.annotations.description || ''}${a.annotations.runbook ? html`\n\nWhat to do: ${a.annotations.runbook}` : ''}</div></details></td>
    <td class="subject">${alertSubject(a)}</td><td>${a.labels.layer || '–'}</td>
    <td class="num">${ago(activeSince(a), now)}</td></tr>`;
}

function alertTable(list, now, empty) {
  const sorted = [...list].sort((a, b) => (severityRank[b.labels.severity] || 0) - (severityRank[a.labels.severity] || 0) || a.labels.alertname.localeCompare(b.labels.alertname));
  return html`<div class="card"><div class="scroll-x"><table><thead><tr><th>Severity</th><th>Alert</th><th>About</th><th>Layer</th><th class="num">Active since</th></tr></thead>
    <tbody>${sorted.length ? sorted.map((a) => alertRow(a, now)) : html`<tr><td colspan="5" class="muted">${empty}</td></tr>`}</tbody></table></div></div>`;
}

// How long a run of an alert lasted, from the data at hand: a run still open whose alert is active
// now lasted since it went pending (activeAt) or since it fired (activeAt + the rule's `for`);
// otherwise the buckets bound it from above (a sample somewhere in the first bucket, none after
// the last): "≤".
function lasted(e, now) {
  if (e.open && e.live) {
    const since = activeSince(e.live) + (e.state === 'firing' ? (st.forOf[e.name] || 0) : 0);
    if (since <= now) return duration(now - since);
  }
  return `≤ ${duration(Math.min(e.to, now) - e.from)}`;
}

// The alert active now that a history series (labels with alertstate) is about, if any.
function liveAlert(labels, alerts) {
  return alerts.find((a) => a.state === labels.alertstate && Object.entries(a.labels).every(([k, v]) => labels[k] === v));
}

function history(d, ctx) {
  const lanes = [];
  const events = [];
  for (const s of d.series) {
    // One run per episode: buckets of one episode that the downsampling left empty (an alert
    // evaluated every 15 s seen at a 60 s step) do not split it (chart.js episodes()).
    const runs = episodes(s.max, d.step, episodeGap(ctx.info && ctx.info.rule_interval_s));
    if (!runs.length) continue;
    const who = s.labels.gpu !== undefined ? ` · GPU ${s.labels.gpu}` : '';
    lanes.push({ label: `${s.labels.alertname}${who}`, state: s.labels.alertstate, runs });
    const live = liveAlert(s.labels, ctx.alerts);
    for (const [a, b] of runs) {
      // Still going: it reaches the last bucket, or the one before while the alert is active now
      // (the current bucket's first evaluation may not be stored yet: up to a rule interval
      // after a bucket boundary the run seemed over).
      const open = b === d.points - 1 || (b === d.points - 2 && live !== undefined);
      events.push({ name: s.labels.alertname, labels: s.labels, state: s.labels.alertstate, from: d.start + a * d.step, to: d.start + (b + 1) * d.step, open, live: open ? live : undefined });
    }
  }
  if (!lanes.length) return html`<div class="card empty"><b>No alert in this range</b>Nothing fired or was pending.</div>`;
  lanes.sort((a, b) => a.label.localeCompare(b.label) || a.state.localeCompare(b.state));
  const p = (i) => ((i / d.points) * 100).toFixed(2);
  const timeline = html`<div class="timeline card">${lanes.map((l) => html`<div class="lane"><span>${l.label} <small>${l.state}</small></span><div class="track">${l.runs.map(([a, b]) => html`<span style="left:${p(a)}%;width:${p(b + 1 - a)}%;background:${l.state === 'firing' ? '#f85149' : '#d29922'}"></span>`)}</div></div>`)}
    <div class="axis"><div></div><div><span>${clock(d.start, true)}</span><span>${clock((d.start + d.end) / 2)}</span><span>${clock(d.end)}</span></div></div></div>`;
  events.sort((a, b) => b.from - a.from);
  const now = ctx.now;
  const table = html`<div class="card"><div class="scroll-x"><table class="history-table"><thead><tr><th>Alert</th><th>About</th><th>State</th><th>From</th><th>To</th><th class="num">Lasted</th></tr></thead><tbody>
    ${events.slice(0, 100).map((e) => html`<tr data-alert="${e.name}" data-state="${e.state}" data-open="${e.open}"><td>${e.name}</td><td>${alertSubject({ labels: e.labels })}</td><td><span class="pill ${e.state}">${e.state}</span></td>
      <td>${e.open && e.live ? clock(activeSince(e.live) + (e.state === 'firing' ? (st.forOf[e.name] || 0) : 0), true) : clock(e.from, true)}</td><td>${e.open ? 'now' : clock(e.to, true)}</td><td class="num lasted">${lasted(e, now)}</td></tr>`)}</tbody></table></div></div>`;
  return html`${timeline}${table}<p class="muted">Resolution ${duration(d.step)}: the store's ALERTS series, downsampled.</p>`;
}

function rulesTable(groups) {
  if (!groups) return html`<div class="card empty">Rules are not available on this agent.</div>`;
  const rows = groups.map((g) => {
    const bad = g.rules.filter((r) => r.health && r.health !== 'ok');
    return html`<tr><td><b>${g.name}</b><br><small>${(g.file || '').split('/').pop()}</small></td><td class="num">${g.rules.length}</td>
      <td class="num">${g.rules.filter((r) => r.type === 'alerting').length}</td><td class="num">${g.interval}s</td>
      <td class="num">${(g.evaluationTime * 1000).toFixed(1)} ms</td>
      <td>${bad.length ? bad.map((r) => html`<div><span class="pill critical">${r.health}</span> ${r.name}: <small>${r.lastError || ''}</small></div>`) : html`<span class="pill ok">ok</span>`}</td></tr>`;
  });
  return html`<div class="card"><div class="scroll-x"><table><thead><tr><th>Group</th><th class="num">Rules</th><th class="num">Alerts</th><th class="num">Every</th><th class="num">Last evaluation</th><th>Health</th></tr></thead><tbody>${rows}</tbody></table></div></div>`;
}

async function refreshHistory(ctx) {
  st.histAt = ctx.now;
  const step = st.range / POINTS;
  const end = Math.ceil(ctx.now / step) * step;
  const token = (st.token = (st.token || 0) + 1);
  const [d, rules] = await Promise.all([
    ctx.info.history ? chart('ALERTS', { start: end - st.range, end, points: POINTS }) : null,
    getJson('/api/v1/rules'),
  ]);
  if (!st || token !== st.token) return;
  st.forOf = {};
  for (const g of rules.data?.groups || []) for (const r of g.rules) if (r.type === 'alerting') st.forOf[r.name] = r.duration || 0;
  render(st.els.history, d ? history(d, ctx) : html`<div class="card empty">This agent keeps no history.</div>`);
  render(st.els.rules, rulesTable(rules.data?.groups));
}

function drawRanges(ctx) {
  render(st.els.ranges, html`<div class="seg">${RANGES.map(([n, s]) => html`<button type="button" data-range="${n}" class="${s === st.range ? 'on' : ''}">${n}</button>`)}</div>`);
  st.els.ranges.querySelectorAll('button').forEach((b) => b.addEventListener('click', () => {
    st.range = RANGES.find(([n]) => n === b.dataset.range)[1];
    drawRanges(ctx);
    refreshHistory(ctx);
  }));
}

export default {
  title: () => 'Alerts',
  mount(root, ctx) {
    root.innerHTML = `<div class="pagehead"><div><h1>Alerts</h1><div class="sub">${scope.hub ? "Raised by the rules evaluated over the fleet's central store" : 'Raised by the rules this agent evaluates over its own history'}</div></div></div>
      <div class="kpis"></div><h2>Firing</h2><div class="firing"></div><h2>Pending</h2><div class="pending"></div>
      <div class="pagehead"><h2>History</h2><div class="ranges"></div></div><div class="history"></div><h2>Rules</h2><div class="rules"></div>`;
    st = { range: 21600, histAt: -Infinity, forOf: {}, want: ctx.route.query.get('alert'), els: Object.fromEntries(['kpis', 'firing', 'pending', 'ranges', 'history', 'rules'].map((c) => [c, root.querySelector(`.${c}`)])) };
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    if (!st.rangesDrawn) { st.rangesDrawn = true; drawRanges(ctx); }
    const firing = ctx.alerts.filter((a) => a.state === 'firing');
    const pending = ctx.alerts.filter((a) => a.state === 'pending');
    const n = (sev) => firing.filter((a) => a.labels.severity === sev).length;
    const k = (label, value, level = '') => html`<div class="kpi card ${value ? level : ''}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
    render(st.els.kpis, [k('Critical', n('critical'), 'critical'), k('Warning', n('warning'), 'warning'), k('Info', n('info')), k('Pending', pending.length, 'warning')]);
    render(st.els.firing, alertTable(firing, ctx.now, 'No alert is firing.'));
    render(st.els.pending, alertTable(pending, ctx.now, 'No alert is pending.'));
    if (st.want && !st.scrolled) {
      const row = st.els.firing.querySelector('tr.target') || st.els.pending.querySelector('tr.target');
      if (row) { st.scrolled = true; row.scrollIntoView({ block: 'center' }); }
    }
    if (ctx.now - st.histAt >= Math.max(5, st.range / POINTS) || ctx.now < st.histAt) await refreshHistory(ctx);
  },
  unmount() { st = null; },
};
