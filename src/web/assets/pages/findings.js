// Findings: diagnoses that name the layer at fault (device, task, scheduling, governance,
// business) with their evidence and what to do, from GET /api/gw/v1/findings, grouped by layer.
// Shape: {status, data: {time, window_seconds, findings: [{id, kind, cause, layer, severity,
//   subject: {gpu?, uuid?, job?, team?, partition?, target?}, related_gpus, title,
//   evidence: [{what, value, unit, start, end, query}], action, since, last, held_seconds, active}]}}
// A firing critical or warning alert is never contradicted: until the findings service has
// something to say, the firing alerts are this page's first items (by their layer label).
import { getJson } from '../api.js';
import { clock, duration, html, render, severityRank } from '../format.js';
import { activeSince, alertHref, alertSubject, gpuLink, jobLink, queryHref, teamLink } from './links.js';

export const LAYERS = ['device', 'task', 'scheduling', 'governance', 'business'];
let st = null;

// An evidence value in its unit, as people read it.
export function evidenceValue(e) {
  const v = e.value;
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  const u = e.unit || '';
  const n = (x, d = 2) => Number(x).toLocaleString('en-US', { maximumFractionDigits: d });
  // The units of diagnose's evidence (src/diagnose/diagnose.cpp FormatValue).
  if (u === 'ratio') return `${n(v * 100, 1)}\u00a0%`;
  if (u === 'seconds') return v < 1 ? `${n(v * 1000, 0)}\u00a0ms` : duration(v);
  if (u === 'bytes') return `${n(v / 2 ** 30, 1)}\u00a0GiB`;
  if (u === 'celsius') return `${n(v, 1)}\u00a0°C`;
  if (u === 'watts') return `${n(v, 0)}\u00a0W`;
  if (u === 'hertz') return `${n(v / 1e6, 0)}\u00a0MHz`;
  if (u === 'per_hour') return `${n(v, 1)}/h`;
  if (u === 'per_second') return `${n(v, 3)}/s`;
  return u ? `${n(v)}\u00a0${u.replace(/_/g, ' ')}` : n(v);
}

// One evidence line: what, its value, over which span, and the PromQL behind it as a chart link.
export function evidenceItem(e) {
  if (typeof e === 'string') return html`<li>${e}</li>`;
  const span = e.start && e.end && e.end > e.start
    ? html`<span class="span">${clock(e.start)}–${clock(e.end)} (${duration(e.end - e.start)})</span>`
    : e.end ? html`<span class="span">at ${clock(e.end)}</span>` : '';
  return html`<li class="evidence"><span class="what">${e.what || 'value'}</span>: <b class="value">${evidenceValue(e)}</b> ${span}
    ${e.query ? html`<a class="promql" href="${queryHref(e.query, e.start, e.end, e.what)}" title="${e.query}">chart of the query</a>` : ''}</li>`;
}

function subjectLinks(f) {
  const s = f.subject || {};
  const where = [];
  // Under `gpuwarden hub`: the node it is about (docs/hub.md), and its GPU on that node.
  if (f.node) where.push(html`node <a href="#/node/${encodeURIComponent(f.node)}" data-link="node">${f.node}</a>`);
  if (s.gpu !== undefined && s.gpu !== '') where.push(gpuLink(s.gpu, undefined, f.node));
  if (s.job) where.push(html`job ${jobLink(s.job)}`);
  if (s.team) where.push(html`team ${teamLink(s.team)}`);
  if (s.partition) where.push(html`partition <b>${s.partition}</b>`);
  if (s.target) where.push(html`target <b>${s.target}</b>`);
  if ((f.related_gpus || []).length) where.push(html`served by ${f.related_gpus.map((g, i) => html`${i ? ', ' : ''}${gpuLink(g)}`)}`);
  return where;
}

export function findingCard(f, now) {
  const where = subjectLinks(f);
  const since = f.since ? duration(now - f.since) : '';
  return html`<article class="finding card" id="finding-${f.id}" data-node="${f.node || ''}" data-severity="${f.severity}" data-id="${f.id}" data-layer="${f.layer}">
    <h3><span class="pill ${f.severity}">${f.severity}</span>${f.title}<span class="chip">${f.layer}</span></h3>
    <div class="muted where">${where.map((w, i) => html`${i ? ' · ' : ''}${w}`)}${since ? html` · for ${since}` : ''}</div>
    ${f.evidence && f.evidence.length ? html`<ul class="evidence-list">${f.evidence.map(evidenceItem)}</ul>` : ''}
    ${f.action ? html`<div class="action"><b>What to do:</b> ${f.action}</div>` : ''}
  </article>`;
}

// A firing alert shown as an item of this page (while no finding covers it).
function alertCard(a, now) {
  const since = activeSince(a);
  return html`<article class="finding card alert-item" data-severity="${a.labels.severity}" data-alert="${a.labels.alertname}" data-layer="${a.labels.layer || ''}">
    <h3><span class="pill ${a.labels.severity}">${a.labels.severity}</span><a href="${alertHref(a.labels.alertname)}">${a.labels.alertname}</a><span class="chip">alert firing</span></h3>
    <div class="muted where">${alertSubject(a)}${since ? html` · active for ${duration(now - since)}` : ''}</div>
    <div>${a.annotations.summary || ''}</div>
    ${a.annotations.runbook ? html`<div class="action"><b>What to do:</b> ${a.annotations.runbook}</div>` : ''}
  </article>`;
}

function layerOf(x) { return LAYERS.includes(x) ? x : 'other'; }

function draw(ctx) {
  const r = st.r;
  if (r.missing) {
    render(st.el, html`<div class="card empty" data-missing="findings"><b>Findings are not available on this agent</b>This gpuwarden does not serve /api/gw/v1/findings. Alerts and health problems are on the <a href="#/alerts">Alerts</a> and <a href="#/fleet">Fleet</a> pages.</div>`);
    return;
  }
  const findings = r.error ? [] : [...(r.data?.findings || [])].filter((f) => f.active !== false);
  const firing = ctx.alerts.filter((a) => a.state === 'firing' && ['critical', 'warning'].includes(a.labels.severity));
  const bySev = (a, b) => (severityRank[b] || 0) - (severityRank[a] || 0);
  const groups = {};
  for (const f of findings) (groups[layerOf(f.layer)] ||= { findings: [], alerts: [] }).findings.push(f);
  // Firing alerts: the first items while there is no finding; after the findings otherwise.
  for (const a of firing) (groups[layerOf(a.labels.layer)] ||= { findings: [], alerts: [] }).alerts.push(a);
  const order = [...LAYERS, 'other'].filter((l) => groups[l]);
  const head = r.error ? html`<div class="card empty"><b>Findings could not be read</b>${r.error}</div>` : '';
  if (!order.length) {
    render(st.el, html`${head}${r.error ? '' : html`<div class="card empty findings-empty"><b>No finding</b>No finding is active and no warning or critical alert is firing.</div>`}`);
    return;
  }
  const note = !findings.length && firing.length
    ? html`<p class="muted findings-note">The findings service has no finding yet (it looks back over ${duration(r.data?.window_seconds || 3600)} of history); these alerts are firing now.</p>` : '';
  render(st.el, html`${head}${note}${order.map((l) => {
    const g = groups[l];
    g.findings.sort((a, b) => bySev(a.severity, b.severity));
    g.alerts.sort((a, b) => bySev(a.labels.severity, b.labels.severity));
    const items = findings.length
      ? [...g.findings.map((f) => findingCard(f, ctx.now)), ...g.alerts.map((a) => alertCard(a, ctx.now))]
      : g.alerts.map((a) => alertCard(a, ctx.now));
    return html`<section class="layer" data-layer="${l}"><h2>${l === 'other' ? 'Other' : `${l[0].toUpperCase()}${l.slice(1)} layer`} <small class="muted">${g.findings.length} finding${g.findings.length === 1 ? '' : 's'}${g.alerts.length ? ` · ${g.alerts.length} alert${g.alerts.length === 1 ? '' : 's'} firing` : ''}</small></h2>${items}</section>`;
  })}`);
  const want = ctx.route.query.get('id');
  if (want && !st.scrolled) {
    const el = document.getElementById(`finding-${want}`);
    if (el) { st.scrolled = true; el.classList.add('target'); el.scrollIntoView({ block: 'center' }); }
  }
}

export default {
  title: () => 'Findings',
  mount(root) {
    root.innerHTML = `<div class="pagehead"><div><h1>Findings</h1><div class="sub">What is wrong, at which layer, the evidence, and what to do</div></div></div><div class="body findings-body"></div>`;
    st = { at: -Infinity, el: root.querySelector('.body'), r: null };
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    if (!st.r || ctx.now - st.at >= 5 || ctx.now < st.at) {
      st.at = ctx.now;
      const r = await getJson('/api/gw/v1/findings');
      if (!st) return;
      st.r = r;
    }
    draw(ctx);
  },
  unmount() { st = null; },
};
