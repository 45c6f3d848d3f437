// Reclaim: the fleet's reclaim loop — the policies, the jobs noticed and waiting out their grace
// period, the GPUs idle now, and every recent decision (dry-run or acted) with its evidence.
import { duration, html, render } from '../format.js';
import { gpuLink } from './links.js';
import { decisionsTable, loadReclaim, noticeRows, policyText } from './governance.js';

const REFRESH_S = 5;
let st = null;

function draw(ctx) {
  const r = st.r;
  if (r.missing || r.error) {
    render(st.el, html`<div class="card empty"><b>The reclaim loop could not be read</b>${r.error || 'This agent has no /api/gw/v1/reclaim.'}</div>`);
    return;
  }
  const d = r.data;
  const now = d.time || ctx.now;
  const dry = d.decisions.filter((x) => x.stage === 'action' && x.action === 'dry-run').length;
  const acted = d.decisions.filter((x) => ['action', 'done'].includes(x.stage) && x.action !== 'dry-run').length;
  const k = (label, value, level = '') => html`<div class="kpi card ${value ? level : ''}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
  render(st.el, html`<div class="kpis">${[k('Policies', d.policies.length), k('In grace period', (d.notices || []).length, 'warning'), k('Idle GPUs now', d.idle_gpus.length, 'warning'),
    k('Dry-run decisions', dry, 'warning'), k('Actions', acted, 'critical')]}</div>
    <h2>Policies</h2>
    <div class="card">${d.policies.length ? html`<ul class="policies">${d.policies.map((p) => html`<li>${policyText(p)}</li>`)}</ul>`
    : html`<p class="muted">No reclaim policy is configured (governance.reclaim): idle GPUs are reported, never reclaimed.</p>`}</div>
    <h2>Notices in their grace period</h2>
    <div class="card notices">${(d.notices || []).length ? noticeRows(d.notices, now) : html`<p class="muted">No job is in a grace period.</p>`}</div>
    <h2>Idle GPUs</h2>
    <div class="card">${d.idle_gpus.length ? html`<div class="scroll-x"><table><thead><tr><th>GPU</th><th class="num">Idle for</th><th>Memory</th></tr></thead><tbody>${d.idle_gpus.map((g) => html`<tr><td>${gpuLink(g.gpu)}${g.mig_instance !== undefined ? ` · MIG ${g.mig_instance}` : ''}</td><td class="num">${duration(g.idle_s)}</td><td>${g.memory_held ? 'held' : 'free'}</td></tr>`)}</tbody></table></div>`
    : html`<p class="muted">No allocated GPU is idle now.</p>`}</div>
    <h2>Decisions</h2>
    <div class="card">${decisionsTable(d.decisions, { empty: 'No reclaim decision yet.' })}
    <p class="muted">Newest first, the last ${d.decisions.length} kept in memory; every decision is also appended to ${d.decisions_log}.</p></div>`);
}

export default {
  title: () => 'Reclaim',
  mount(root) {
    root.innerHTML = `<div class="pagehead"><div><h1>Reclaim</h1><div class="sub">GPUs held idle: notices, grace periods and decisions, with the policy that fired and the evidence</div></div></div><div class="body reclaim-page"></div>`;
    st = { at: -Infinity, r: null, el: root.querySelector('.body') };
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    if (!st.r || ctx.now - st.at >= REFRESH_S || ctx.now < st.at) {
      st.at = ctx.now;
      const r = await loadReclaim({}, 200);
      if (!st) return;
      st.r = r;
    }
    draw(ctx);
  },
  unmount() { st = null; },
};
