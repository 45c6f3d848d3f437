// The reclaim loop as the pages show it (GET /api/gw/v1/reclaim, serve/governance_api.h): open
// notices with their grace period, and decisions (notice, dry-run or acted, withdrawn, exempt, done,
// failed) with the policy that fired and the evidence. Used by the GPU, job, team and reclaim pages.
import { getJson } from '../api.js';
import { clock, duration, html, pct } from '../format.js';
import { gpuLink, jobLink, period, teamLink } from './links.js';

// ?job=, ?team=, ?gpu= (one at most), newest decisions first.
export function loadReclaim(filter = {}, limit = 100) {
  const p = new URLSearchParams({ limit: String(limit) });
  for (const [k, v] of Object.entries(filter)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  return getJson(`/api/gw/v1/reclaim?${p}`);
}

const STAGE_LEVEL = { notice: 'warning', action: 'critical', done: 'critical', failed: 'critical', withdrawn: 'ok', exempt: 'info' };

// "dry-run (nothing done)", "cancel", …: what the decision did.
export function decisionWhat(d) {
  if (d.stage === 'notice') return 'notice';
  if (d.stage === 'action') return d.action === 'dry-run' ? 'dry-run decision (nothing done)' : `${d.action} ordered`;
  if (d.stage === 'done') return `${d.action} done`;
  if (d.stage === 'failed') return `${d.action} failed`;
  if (d.stage === 'withdrawn') return 'notice withdrawn (active again)';
  if (d.stage === 'exempt') return 'exempt';
  return d.stage;
}

function evidenceText(d) {
  const e = d.evidence || {};
  const gpus = (e.gpus || []).map((g, i) => html`${i ? '; ' : ''}${gpuLink(g.gpu)}${g.mig_instance !== undefined ? ` (MIG ${g.mig_instance})` : ''}: util ${pct(g.util_ratio)}, idle ${duration(g.idle_s)}${g.idle_since ? ` since ${clock(g.idle_since)}` : ''}, memory ${g.memory_held ? 'held' : 'free'}`);
  return html`<div class="evidence">${gpus}${e.idle_threshold !== undefined ? html`<br><small>idle = utilization ≤ ${pct(e.idle_threshold)}; policy: idle for ${duration(e.idle_for_s)}, grace ${duration(e.grace_s)}${e.noticed_time ? `; noticed ${clock(e.noticed_time)}` : ''}</small>` : ''}</div>`;
}

export function decisionRows(list, { showJob = true } = {}) {
  return list.map((d) => html`<tr data-stage="${d.stage}" data-action="${d.action}" data-job="${d.job_id}">
    <td class="num">${clock(d.time, true)}</td>
    ${showJob ? html`<td>${jobLink(d.job_id, d.job_name && d.job_name !== d.job_id ? `${d.job_name} (${d.job_id})` : d.job_id)}<br><small>${d.user || ''} · ${teamLink(d.team)}</small></td>` : ''}
    <td><span class="pill ${STAGE_LEVEL[d.stage] || 'info'}">${decisionWhat(d)}</span><br><small>${d.reason}</small></td>
    <td>${d.detail}<br><small class="muted">policy: ${d.policy}</small></td>
    <td>${evidenceText(d)}</td></tr>`);
}

export function decisionsTable(list, opts = {}) {
  const head = ['When', ...(opts.showJob === false ? [] : ['Job']), 'Decision', 'Why', 'Evidence'];
  return html`<div class="scroll-x"><table class="reclaim-decisions"><thead><tr>${head.map((h) => html`<th>${h}</th>`)}</tr></thead>
    <tbody>${list.length ? decisionRows(list, opts) : html`<tr><td colspan="${head.length}" class="muted">${opts.empty || 'No reclaim decision.'}</td></tr>`}</tbody></table></div>`;
}

export function noticeRows(notices, now) {
  return notices.map((n) => {
    const left = n.grace_ends_at - now;
    return html`<div class="notice row" data-job="${n.job_id}"><span class="pill warning">notice</span>
      <span>${jobLink(n.job_id, n.job_name || n.job_id)} (${n.user || '–'}, team ${teamLink(n.team)}) was noticed idle at ${clock(n.noticed_at)};
      grace period ${duration(n.grace_s)} ${left > 0 ? html`ends <b>in ${duration(left)}</b> (${clock(n.grace_ends_at)})` : html`ended at ${clock(n.grace_ends_at)}`}.
      <small class="muted">policy: ${n.policy}</small></span></div>`;
  });
}

// A policy as a sentence: "partition=*,team=*: idle 10m → notice, grace 5m → dry-run".
export function policyText(p) {
  return html`<span class="policy">${p.policy}: idle ${period(p.idle_for_s)}${p.memory && p.memory !== 'any' ? ` (memory ${p.memory})` : ''} → notice, grace ${period(p.grace_s)} → ${p.action}</span>`;
}

// A card: the open notices and the decisions of one subject; `what` names it ("this GPU", …).
export function reclaimCard(r, now, { what, showJob = true } = {}) {
  if (!r) return html`<section class="card reclaim"><header><h3>Reclaim</h3></header><p class="muted">Reading the reclaim loop…</p></section>`;
  if (r.missing || r.error) return html`<section class="card reclaim"><header><h3>Reclaim</h3></header><p class="muted">${r.error ? `The reclaim loop could not be read: ${r.error}` : 'This agent has no reclaim API.'}</p></section>`;
  const d = r.data;
  const policies = d.policies.length
    ? html`${d.policies.map((p, i) => html`${i ? '; ' : ''}${policyText(p)}`)}`
    : 'no reclaim policy is configured (governance.reclaim): idle GPUs are reported, never reclaimed';
  return html`<section class="card reclaim" data-decisions="${d.decisions.length}" data-notices="${d.notices?.length || 0}"><header><h3>Reclaim</h3><small class="muted"><a href="#/reclaim">every decision</a></small></header>
    <p class="muted">Policies: ${policies}.</p>
    ${(d.notices || []).length ? noticeRows(d.notices, d.time || now) : html`<p class="muted">No open notice for ${what}.</p>`}
    ${decisionsTable(d.decisions, { showJob, empty: `No reclaim decision for ${what}.` })}</section>`;
}
