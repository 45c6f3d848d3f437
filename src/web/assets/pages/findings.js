// Findings: diagnoses that name the layer at fault (device, job, platform) with their evidence
// and what to do, from GET /api/gw/v1/findings when this agent has it.
// Expected shape: {status, data: {findings: [{id, layer, severity, gpu?, job?, team?, title,
//                  evidence: [text...], action, since}]}}
import { duration, html, render, severityRank } from '../format.js';
import { getJson } from '../api.js';

let st = null;

function finding(f, now) {
  const where = [
    f.gpu !== undefined && f.gpu !== null ? html`<a href="#/gpu/${f.gpu}">GPU ${f.gpu}</a>` : '',
    f.job ? html`job <b>${f.job}</b>` : '',
    f.team ? html`team <b>${f.team}</b>` : '',
  ].filter((x) => x !== '');
  const sinceS = typeof f.since === 'number' ? f.since : f.since ? Date.parse(f.since) / 1000 : undefined;
  const since = sinceS === undefined || Number.isNaN(sinceS) ? '' : duration(now - sinceS);
  return html`<article class="finding card" data-severity="${f.severity}" data-id="${f.id}">
    <h3><span class="pill ${f.severity}">${f.severity}</span>${f.title}<span class="chip">${f.layer}</span></h3>
    <div class="muted">${where.map((w, i) => html`${i ? ' · ' : ''}${w}`)}${since ? html` · for ${since}` : ''}</div>
    ${f.evidence && f.evidence.length ? html`<ul>${f.evidence.map((e) => html`<li>${typeof e === 'string' ? e : JSON.stringify(e)}</li>`)}</ul>` : ''}
    ${f.action ? html`<div class="action"><b>What to do:</b> ${f.action}</div>` : ''}
  </article>`;
}

export default {
  title: () => 'Findings',
  mount(root) {
    root.innerHTML = `<div class="pagehead"><div><h1>Findings</h1><div class="sub">What is wrong, at which layer, the evidence, and what to do</div></div></div><div class="body"></div>`;
    st = { at: -Infinity, el: root.querySelector('.body') };
  },
  async update(ctx) {
    if (ctx.now - st.at < 5 && ctx.now >= st.at) return;
    st.at = ctx.now;
    const r = await getJson('/api/gw/v1/findings');
    if (!st) return;
    if (r.missing) {
      render(st.el, html`<div class="card empty" data-missing="findings"><b>Findings are not available on this agent</b>This gpuwarden does not serve /api/gw/v1/findings. Alerts and health problems are on the <a href="#/alerts">Alerts</a> and <a href="#/fleet">Fleet</a> pages.</div>`);
      return;
    }
    if (r.error) {
      render(st.el, html`<div class="card empty"><b>Findings could not be read</b>${r.error}</div>`);
      return;
    }
    const list = [...(r.data?.findings || [])].sort((a, b) => (severityRank[b.severity] || 0) - (severityRank[a.severity] || 0));
    render(st.el, list.length ? list.map((f) => finding(f, ctx.now)) : html`<div class="card empty"><b>No finding</b>Nothing needs attention.</div>`);
  },
  unmount() { st = null; },
};
