// Links between the console's layers: a GPU, a job, a team, an alert, a finding, a reclaim
// decision each has its page, and every page names the others through these helpers so that a
// name on screen is always a way to its page.
import { scope } from '../api.js';
import { duration, html } from '../format.js';

const enc = encodeURIComponent;

// `node`: under the hub, the node the GPU is on (a fleet-wide list names GPUs of many nodes).
export const gpuHref = (gpu, node) => `#/gpu/${enc(gpu)}${node ? `?node=${enc(node)}` : ''}`;
export const jobHref = (id) => `#/job/${enc(id)}`;
export const teamHref = (name) => `#/team/${enc(name)}`;

// Links, or "–" when the value is absent.
export function gpuLink(gpu, text, node) {
  if (gpu === undefined || gpu === null || gpu === '') return '–';
  return html`<a href="${gpuHref(gpu, node)}" data-link="gpu">${text ?? `GPU ${gpu}`}</a>`;
}
export function jobLink(id, text) {
  if (!id) return '–';
  return html`<a href="${jobHref(id)}" data-link="job">${text || id}</a>`;
}
// A job's name as a link, its id under it unless the name is the id (jobs read from the store
// have no name), and `source` (where the row comes from) beside the id.
export function jobCell(j, source) {
  const named = j.name && j.name !== j.job_id;
  return html`${jobLink(j.job_id, j.name || j.job_id)}${named || source ? html`<br>` : ''}${named ? html`<small class="mono">${j.job_id}</small>` : ''}${source ? html` <small class="source">${source}</small>` : ''}`;
}
export function teamLink(name, text) {
  if (!name) return '–';
  return html`<a href="${teamHref(name)}" data-link="team">${text || name}</a>`;
}
export function gpuList(gpus, node) {
  if (!gpus || !gpus.length) return '–';
  return html`${gpus.map((g, i) => html`${i ? ', ' : ''}${gpuLink(g, String(g), node)}`)}`;
}

// An alert's subject as links: its GPU, job and team (labels gpu, job_id, team). Under the hub
// an alert names its node (the hub's node label) when every node is shown, and its GPU link
// goes to that node's GPU.
export function alertSubject(a) {
  const l = a.labels || {};
  const parts = [];
  const node = scope.hub ? l[scope.nodeLabel] : undefined;
  if (node && !scope.node) parts.push(html`node <a href="#/node/${enc(node)}">${node}</a>`);
  if (l.gpu !== undefined) parts.push(gpuLink(l.gpu, undefined, node));
  if (l.job_id) parts.push(html`job ${jobLink(l.job_id)}`);
  if (l.team) parts.push(html`team ${teamLink(l.team)}`);
  if (l.target) parts.push(html`target ${l.target}`);
  if (l.partition && !l.job_id) parts.push(html`partition ${l.partition}`);
  return parts.length ? html`${parts.map((p, i) => html`${i ? ' · ' : ''}${p}`)}` : '–';
}

// The alerts page with one alert's row in view.
export const alertHref = (name) => `#/alerts?alert=${enc(name)}`;
export const findingHref = (id) => `#/findings?id=${enc(id)}`;

// When an alert became active / started firing, in Unix seconds (activeAt is RFC 3339).
export function activeSince(a) {
  const t = Date.parse(a.activeAt);
  return Number.isNaN(t) ? undefined : t / 1000;
}

// The chart page of one PromQL expression over [start, end].
export function queryHref(expr, start, end, title) {
  const p = new URLSearchParams({ expr });
  if (end) {
    // An instant or a short span is shown with the half hour before it, for context.
    const from = start && end - start >= 600 ? start : end - 1800;
    p.set('from', String(Math.floor(from)));
    p.set('to', String(Math.ceil(end + 60)));
  }
  if (title) p.set('title', title);
  return `#/query?${p}`;
}

// A configured period or threshold in whole units where it has them: 600 -> "10m", 86400 -> "1d".
export function period(s) {
  if (s > 0 && s % 86400 === 0) return `${s / 86400}d`;
  if (s > 0 && s % 3600 === 0) return `${s / 3600}h`;
  if (s > 0 && s % 60 === 0) return `${s / 60}m`;
  return duration(s);
}
