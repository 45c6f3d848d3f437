// The console's shell: hash routes (#/fleet, #/gpu/3, #/jobs, #/job/<id>, #/teams, #/team/<name>,
// #/alerts, #/findings, #/reclaim, #/query?expr=…; under `gpuwarden hub` also #/node/<name> and
// ?node=<name> on any route, which choose the node the pages show; anything else: a not-found page), the data
// every page shares (the snapshot, the alerts, the running jobs), refreshed every REFRESH_MS
// without reloading, and the navigation bar's live state.
import { getJson, scope } from './api.js';
import { clockSeconds, esc } from './format.js';
import fleet from './pages/fleet.js';
import gpu from './pages/gpu.js';
import jobs from './pages/jobs.js';
import teams from './pages/teams.js';
import alerts from './pages/alerts.js';
import findings from './pages/findings.js';
import job from './pages/job.js';
import team from './pages/team.js';
import reclaim from './pages/reclaim.js';
import query from './pages/query.js';
import notfound from './pages/notfound.js';

const REFRESH_MS = 2000;
const PAGES = { fleet, node: fleet, gpu, jobs, job, teams, team, alerts, findings, reclaim, query, notfound };
// The navigation entry a page belongs under.
const NAV_OF = { node: 'fleet', gpu: 'fleet', job: 'jobs', team: 'teams', reclaim: 'teams', query: 'alerts' };

const ctx = { info: null, snapshot: null, alerts: [], jobs: [], jobsScope: undefined, now: 0, route: null, error: null };
let current = null;
let painted = false;
let timer = null;

function parseRoute() {
  const hash = location.hash.replace(/^#\/?/, '');
  const at = hash.indexOf('?');
  const path = at < 0 ? hash : hash.slice(0, at);
  const q = at < 0 ? '' : hash.slice(at + 1);
  const [name, ...rest] = (path || 'fleet').split('/');
  const args = rest.map((a) => { try { return decodeURIComponent(a); } catch (e) { return a; } });
  const known = Object.prototype.hasOwnProperty.call(PAGES, name) && name !== 'notfound';
  return { name: known ? name : 'notfound', args, query: new URLSearchParams(q), path: path || 'fleet' };
}

async function loadShared() {
  const [snap, al, jb] = await Promise.all([
    getJson('/api/snapshot'),
    getJson('/api/v1/alerts'),
    getJson('/api/gw/v1/jobs?running=1'),
  ]);
  if (snap.error || snap.missing) {
    ctx.error = snap.error || 'the agent has no /api/snapshot';
    return;
  }
  if (scope.hub && (snap.node || '') !== scope.node) return;  // asked before another node was chosen
  ctx.error = null;
  ctx.snapshot = snap;
  ctx.now = snap.taken_at || Date.now() / 1000;
  ctx.alerts = al.data ? al.data.alerts : [];
  // A failed jobs read keeps the last list of the same scope (the last data stays on screen).
  if (jb.data) ctx.jobs = jb.data.jobs;
  else if (ctx.jobsScope !== scope.node) ctx.jobs = [];
  ctx.jobsScope = scope.node;
}

function updateChrome() {
  const live = document.getElementById('live');
  const banner = document.getElementById('banner');
  if (scope.hub) nodeSelector();
  if (ctx.error) {
    live.className = 'live down';
    live.textContent = scope.hub ? 'store unreachable' : 'agent unreachable';
    banner.hidden = false;
    banner.textContent = `${scope.hub ? 'The hub cannot read the fleet' : 'Lost contact with the agent'}: ${ctx.error}. Retrying every ${REFRESH_MS / 1000} s; the last data stays on screen.`;
  } else {
    live.className = 'live';
    live.textContent = ctx.snapshot ? `live · ${clockSeconds(ctx.now)}` : 'connecting…';
    banner.hidden = true;
    if (ctx.snapshot && !ctx.snapshot.nvml_up) {
      banner.hidden = false;
      banner.textContent = `NVML is not available on this node: ${ctx.snapshot.nvml_error || 'unknown error'}. No GPU is being watched.`;
    }
  }
  const firing = ctx.alerts.filter((a) => a.state === 'firing');
  const badge = document.querySelector('[data-nav="alerts"] .badge');
  badge.textContent = firing.length || '';
  const worst = ['critical', 'warning'].find((sev) => firing.some((a) => a.labels.severity === sev)) || 'info';
  badge.className = `badge ${worst}`;
  document.querySelectorAll('nav [data-nav]').forEach((a) => {
    const on = a.dataset.nav === ctx.route.name || a.dataset.nav === NAV_OF[ctx.route.name];
    a.classList.toggle('active', on);
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
}

// The hub's node selector in the header: the fleet, or one node (its route #/node/<name>).
function nodeSelector() {
  let select = document.getElementById('node-select');
  if (!select) {
    select = document.createElement('select');
    select.id = 'node-select';
    select.setAttribute('aria-label', 'Node');
    select.title = 'The node the pages show';
    select.style.cssText = 'max-width: 11rem; min-width: 0; flex: 0 1 auto;';
    select.addEventListener('change', () => {
      location.hash = select.value ? `#/node/${encodeURIComponent(select.value)}` : '#/fleet';
    });
    document.querySelector('header.top nav').before(select);
  }
  const names = ctx.snapshot?.node_names || [];
  const want = ['', ...names];
  if (select.options.length !== want.length || want.some((n, i) => select.options[i].value !== n)) {
    select.replaceChildren(...want.map((n) => new Option(n || `All nodes (${names.length})`, n)));
  }
  select.value = scope.node;
}

// Under the hub: the node a route chooses (#/node/<name>, ?node=<name>; #/fleet: none; other
// routes keep the node chosen before).
function chooseNode(route) {
  if (!scope.hub) return;
  if (route.name === 'node') scope.node = route.args[0] || '';
  else if (route.query.get('node') !== null) scope.node = route.query.get('node');
  else if (route.name === 'fleet') scope.node = '';
}

// body[data-ready] says the first data is on screen; body[data-painted-at] says which snapshot
// (its taken_at) the page on screen was last drawn from, after the page's own requests finished,
// so a test can wait for a given refresh instead of for the live clock (set before the page).
function markPainted(at) {
  document.body.dataset.paintedAt = String(at);
  if (painted) return;
  painted = true;
  performance.mark('gw-data-painted');
  document.body.dataset.ready = 'true';
}

async function tick() {
  clearTimeout(timer);
  await loadShared();
  updateChrome();
  if (current && ctx.snapshot) {
    const at = ctx.now;
    await current.page.update(ctx);
    markPainted(at);
  }
  timer = setTimeout(tick, document.hidden ? REFRESH_MS * 5 : REFRESH_MS);
}

async function route() {
  const next = parseRoute();
  // A page that keeps its state in the URL (filters, sorting) rewrites its own query: no remount.
  if (current && ctx.route && next.path === ctx.route.path && current.page.query) {
    ctx.route = next;
    current.page.query(ctx);
    return;
  }
  ctx.route = next;
  chooseNode(ctx.route);
  // The shared data are of another node than the one now chosen: read them again first.
  if (scope.hub && ctx.snapshot && (ctx.snapshot.node || '') !== scope.node) await loadShared();
  if (current) current.page.unmount?.();
  const root = document.getElementById('main');
  root.innerHTML = '';
  root.dataset.page = ctx.route.name;
  const page = PAGES[ctx.route.name];
  current = { page };
  document.title = `${page.title(ctx.route)} · gpuwarden`;
  page.mount(root, ctx);
  if (ctx.snapshot) {
    updateChrome();
    const at = ctx.now;
    await page.update(ctx);
    markPainted(at);
  }
}

function setupTheme() {
  const stored = localStorage.getItem('gw-theme');
  if (stored) document.documentElement.dataset.theme = stored;
  document.getElementById('theme').addEventListener('click', () => {
    const dark = (document.documentElement.dataset.theme || (matchMedia('(prefers-color-scheme: light)').matches ? 'light' : 'dark')) === 'dark';
    document.documentElement.dataset.theme = dark ? 'light' : 'dark';
    localStorage.setItem('gw-theme', document.documentElement.dataset.theme);
    window.dispatchEvent(new Event('resize'));
    current?.page.redraw?.();
  });
}

async function start() {
  setupTheme();
  // The first data and the agent's description in parallel: one round trip before the first paint.
  const [info] = await Promise.all([getJson('/api/gw/v1/console'), loadShared()]);
  ctx.info = info.data || { version: '', history: false };
  scope.hub = Boolean(ctx.info.hub);
  scope.nodeLabel = ctx.info.node_label || 'instance';
  document.getElementById('version').textContent = ctx.info.version ? `gpuwarden ${ctx.info.version}` : 'gpuwarden';
  window.addEventListener('hashchange', () => route());
  document.addEventListener('visibilitychange', () => { if (!document.hidden) tick(); });
  ctx.route = parseRoute();
  await route();
  updateChrome();
  timer = setTimeout(tick, ctx.snapshot ? REFRESH_MS : 0);
}

start().catch((e) => {
  document.getElementById('main').innerHTML = `<div class="card empty">The console failed to start: ${esc(e.message)}</div>`;
});
