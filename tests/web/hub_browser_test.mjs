// `gpuwarden hub` over a real central store (issue 18, docs/hub.md): 16 simulated agents scraped
// by VictoriaMetrics 1.79 or Prometheus 2.42 (hub_fleet.mjs), the hub in front of it, and the
// console in Debian's chromium:
//   - the walk fleet → node → GPU → job → team, with the node selector following it;
//   - the fault on node 7 (GPU 2's uncorrectable ECC error) in the fleet findings with its node,
//     and on no other node; `gpuwarden diagnose --store` says the same;
//   - `gpuwarden report --store URL --json` covers the 16 nodes and their 128 GPUs;
//   - the teams' cost over the fleet (/api/gw/v1/teams from the nodes' gpu_cost_* counters) equals
//     the sum of the 16 agents' own /api/gw/v1/teams within the store's lag, and the Teams page
//     shows it; node 3's finished job (its agent's record) is on the Jobs page with its node; an
//     agent stopped is named in /api/gw/v1/jobs while its node's running jobs still come from the
//     store as of its last answer, past the staleness markers, and the Jobs page says so;
//   - node 7's ECC alert firing with its node in /api/v1/alerts and on the Alerts page (over
//     VictoriaMetrics from the hub's own evaluation of deploy/rules, `--rules`), not on node 8's;
//   - a bad store URL is refused; the store stopped: the console's banner and the JSON API say
//     so, and the hub keeps serving;
//   - screenshots of the fleet, a node, a GPU and the findings at desktop and phone width.
// Run by ctest (label "browser"):
//   node tests/web/hub_browser_test.mjs BUILD/bin/gpuwarden OUTPUT_DIR victoriametrics|prometheus
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { FAULT_GPU, FINISHED_JOB, Fleet, PRICES, jobsOf, nodeName, teamOf } from './hub_fleet.mjs';
import { launchBrowser, sleep } from './support.mjs';

const [binary, outDir, kind = 'victoriametrics'] = process.argv.slice(2);
if (!binary || !outDir || !['victoriametrics', 'prometheus'].includes(kind)) {
  console.error('usage: node hub_browser_test.mjs GPUWARDEN_BINARY OUTPUT_DIR victoriametrics|prometheus');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const NODES = 16;
const FAULT_NODE = 7;
const WIDE = { width: 1600, height: 1000 };
const PHONE = { width: 420, height: 900 };

async function open(context, url, hash, errors) {
  const page = await context.newPage();
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push(`${hash}: ${msg.text()} (${msg.location().url || ''})`); });
  page.on('pageerror', (e) => errors.push(`${hash}: uncaught ${e.message}`));
  await page.goto(`${url}/${hash}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
  return page;
}

async function shoot(page, name) {
  await sleep(400);
  await page.screenshot({ path: join(outDir, `hub-${kind}-${name}.png`), fullPage: true });
}

async function waitFor(what, fn, ms) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await sleep(1000);
  }
  throw new Error(`${what}: not within ${ms / 1000} s`);
}

test(`hub over ${kind}: fleet → node → GPU → job → team, fleet findings, report, store down`, async (t) => {
  const bad = spawnSync(binary, ['hub', '--store', 'vm:8428', '--listen', '127.0.0.1:0'], { encoding: 'utf8' });
  assert.equal(bad.status, 2, bad.stderr);
  assert.match(bad.stderr, /--store: expected an http:\/\/ or https:\/\/ URL, got 'vm:8428'/);

  const fleet = await Fleet.start(binary, { nodes: NODES, faultNode: FAULT_NODE, kind });
  t.after(() => fleet.stop());
  const began = Date.now();
  const nodes = await fleet.waitForData(150000);
  assert.deepEqual(nodes.map((n) => n.node), Array.from({ length: NODES }, (_, i) => nodeName(i + 1)));
  console.log(`# ${kind}: ${NODES} nodes × 8 GPUs in the store after ${(Date.now() - began) / 1000} s`);

  // The fault on node 7 in the fleet findings, with its node, and on no other node.
  const fault = nodeName(FAULT_NODE);
  const eccOf = (body) => (body.data?.findings || []).filter((f) => f.kind === 'ecc-trend' && f.cause === 'uncorrectable errors');
  const found = await waitFor('the ECC finding of node 7 in /api/gw/v1/findings', async () => {
    const r = await fleet.hubJson('/api/gw/v1/findings');
    const ecc = r.status === 200 ? eccOf(r.body) : [];
    return ecc.length ? ecc : null;
  }, 150000);
  assert.equal(found.length, 1, JSON.stringify(found));
  assert.equal(found[0].node, fault, JSON.stringify(found[0]));
  assert.equal(found[0].subject.gpu, String(FAULT_GPU));
  const scoped = await fleet.hubJson(`/api/gw/v1/findings?node=${fault}`);
  assert.ok(scoped.body.data.findings.every((f) => f.node === fault), 'node= keeps that node only');
  assert.equal(eccOf(scoped.body).length, 1);
  assert.equal(eccOf((await fleet.hubJson('/api/gw/v1/findings?node=node-08')).body).length, 0);

  const diag = spawnSync(binary, ['diagnose', '--store', fleet.storeUrl, '--since', '15m', '--json'], { encoding: 'utf8', timeout: 120000 });
  assert.equal(diag.status, 0, diag.stderr);
  const dj = JSON.parse(diag.stdout);
  assert.deepEqual(eccOf(dj).map((f) => f.node), [fault]);

  // The fleet report covers the 16 nodes and their GPUs.
  const rep = spawnSync(binary, ['report', '--store', fleet.storeUrl, '--period', '10m', '--json'], { encoding: 'utf8', timeout: 180000 });
  assert.equal(rep.status, 0, rep.stderr);
  const report = JSON.parse(rep.stdout);
  assert.equal(report.nodes.length, NODES, JSON.stringify(report.nodes));
  assert.ok(report.nodes.every((n) => n.gpus === 8), JSON.stringify(report.nodes));
  assert.equal(report.fleet.gpus, NODES * 8, JSON.stringify(report.fleet));
  assert.equal(new Set(report.gpus.map((g) => g.node)).size, NODES);

  // The console: fleet → node → GPU → job → team.
  const errors = [];
  const browser = await launchBrowser(WIDE);
  t.after(() => browser.close());
  const page = await open(browser.context, fleet.hubUrl, '#/fleet', errors);
  await page.waitForFunction((n) => document.querySelectorAll('.tile[data-node]').length === n, NODES, { timeout: 20000 });
  assert.equal(await page.$eval('#node-select', (s) => s.value), '');
  assert.equal(await page.$$eval('#node-select option', (o) => o.length), NODES + 1);
  await shoot(page, 'fleet-desktop');

  await page.click(`.tile[data-node="${fault}"]`);
  await page.waitForFunction(() => document.querySelectorAll('.tile[data-gpu]').length === 8, null, { timeout: 20000 });
  assert.equal(await page.textContent('#main h1'), `Node ${fault}`);
  assert.equal(await page.$eval('#node-select', (s) => s.value), fault);
  // GPU 0 is training for job 10007: the tile names it (jobs from the store's allocation series).
  const job = jobsOf(FAULT_NODE)[0];
  await page.waitForFunction((id) => document.querySelector('.tile[data-gpu="0"] .who')?.textContent.includes(id), String(job.job_id), { timeout: 20000 });
  await shoot(page, 'node-desktop');

  await page.click('.tile[data-gpu="0"]');
  // 45 s: the page's twenty chart reads and the refresh that brings the GPU's jobs all wait on
  // the hub and its store (once over 20 s here with a build running beside the test).
  await page.waitForSelector(`tr[data-job="${job.job_id}"] a[data-link="job"]`, { timeout: 45000 });
  assert.match(page.url(), /#\/gpu\/0$/);
  await sleep(4000);  // its twenty charts (one store read each) drawn
  await shoot(page, 'gpu-desktop');

  await page.click(`tr[data-job="${job.job_id}"] a[data-link="job"]`);
  await page.waitForFunction((id) => location.hash === `#/job/${id}` && document.querySelector('#main a[data-link="team"]'), String(job.job_id), { timeout: 20000 });
  // The job page's record comes from node 7's agent (its name), the node kept.
  await page.waitForFunction((name) => document.querySelector('#main').textContent.includes(name), job.name, { timeout: 20000 });
  assert.equal(await page.$eval('#node-select', (s) => s.value), fault);
  const team = teamOf(job.account);
  await page.click(`#main a[data-link="team"][href="#/team/${team}"]`);
  await page.waitForFunction((name) => location.hash === `#/team/${name}` && document.querySelector('#main h1')?.textContent.includes(name), team, { timeout: 20000 });
  // Under node 7 the team's figures are node 7's, as its job list and chart are (it said 17 GPUs
  // held, the fleet's, beside node 7's one job).
  const heldHere = jobsOf(FAULT_NODE).filter((j) => teamOf(j.account) === team).reduce((n, j) => n + j.gpus.length, 0);
  await page.waitForFunction((want) => {
    const k = [...document.querySelectorAll('.kpi')].find((e) => /GPUs held/i.test(e.querySelector('.label')?.textContent || ''));
    return k && new RegExp(`^${want}(\\D|$)`).test(k.querySelector('.value').textContent.trim());
  }, heldHere, { timeout: 20000 });
  await shoot(page, 'team-desktop');

  // Findings page: the fault with its node, linked to it.
  await page.goto(`${fleet.hubUrl}/#/fleet`);
  await page.waitForFunction((n) => document.querySelectorAll('.tile[data-node]').length === n, NODES, { timeout: 20000 });
  await page.goto(`${fleet.hubUrl}/#/findings`);
  const card = `article.finding[data-node="${fault}"][data-id^="ecc-trend"]`;
  await page.waitForSelector(card, { timeout: 20000 });
  assert.match(await page.textContent(`${card} .where`), new RegExp(`node ${fault}`));
  assert.match(await page.textContent(`${card} h3`), /GPU 2 has 1 uncorrectable ECC error since its last reset/);
  await shoot(page, 'findings-desktop');

  // Team cost over the fleet: the hub's sum of the nodes' counters against the agents' own
  // answers read just before and just after it. Tolerance: the hub's figures are the store's
  // newest samples, up to one collection (2 s), one scrape (2 s) and VictoriaMetrics' 1 s latency
  // offset behind the agents, 20 s allowed on a loaded machine: 20 s of the team's spend at the
  // dearest price (H100 4.0 EUR/GPU-h + at most 1 kW × 0.3 EUR/kWh per GPU).
  const agentTeams = async () => {
    const sums = {};
    for (const a of fleet.agents) {
      const r = await (await fetch(`http://127.0.0.1:${a.port}/api/gw/v1/teams`)).json();
      assert.equal(r.data.currency, PRICES.currency);
      for (const team of r.data.teams) sums[team.team] = (sums[team.team] || 0) + team.cost.total_cost;
    }
    return sums;
  };
  const before = await agentTeams();
  const hubTeams = await fleet.hubJson('/api/gw/v1/teams');
  const after = await agentTeams();
  assert.equal(hubTeams.status, 200, JSON.stringify(hubTeams.body));
  assert.equal(hubTeams.body.data.currency, PRICES.currency);
  assert.equal(hubTeams.body.data.cost_nodes, NODES);
  assert.equal(hubTeams.body.data.cost_unavailable, undefined);
  const costOf = Object.fromEntries(hubTeams.body.data.teams.map((x) => [x.team, x]));
  for (const [name, sum] of Object.entries(after)) {
    const h = costOf[name];
    assert.ok(h, `team ${name} is missing from the hub's teams`);
    const slack = 20 * Math.max(1, h.allocated_gpus) * (4.0 + 0.3) / 3600;
    const c = h.cost.total_cost;
    assert.ok(c > 0, `team ${name}: cost ${c}`);
    assert.ok(c >= before[name] - slack && c <= sum + 1e-9,
      `team ${name}: the hub says ${c}, the agents ${before[name]} .. ${sum} (slack ${slack.toFixed(4)})`);
    assert.ok(Math.abs(h.cost.total_cost - h.cost.allocation_cost - h.cost.energy_cost) < 1e-9);
  }
  console.log(`# ${kind}: team cost ${Object.entries(costOf).map(([n, x]) => `${n} ${x.cost.total_cost.toFixed(3)}`).join(', ')} ${PRICES.currency} (agents: ${Object.entries(after).map(([n, v]) => `${n} ${v.toFixed(3)}`).join(', ')})`);
  await page.goto(`${fleet.hubUrl}/#/teams`);
  await page.waitForFunction(() => /EUR/.test(document.querySelector('tr[data-team="research"] td.cost')?.textContent || ''), null, { timeout: 20000 });
  // The Services table under it is an agent's (scrape.targets): the hub answers 404, which the
  // page says ("no services API"); the browser logs that 404 (left out of `errors` below).
  await page.waitForSelector('.services-none', { timeout: 20000 });

  // Node 3's finished job: its agent's record, with its node, on the Jobs page.
  const finished = await waitFor(`job ${FINISHED_JOB.job_id} finished in /api/gw/v1/jobs`, async () => {
    const r = await fleet.hubJson('/api/gw/v1/jobs');
    return (r.body.data?.jobs || []).find((j) => j.job_id === String(FINISHED_JOB.job_id) && j.state === 'COMPLETED');
  }, 150000);
  assert.equal(finished.node, FINISHED_JOB.node);
  assert.equal(finished.name, FINISHED_JOB.name);
  assert.equal(finished.cost?.currency, PRICES.currency);
  await page.goto(`${fleet.hubUrl}/#/jobs`);
  await page.waitForSelector(`.finished tr[data-job="${FINISHED_JOB.job_id}"]`, { timeout: 20000 });
  // Fleet-wide, "GPUs allocated" counts GPUs by node (every node has a GPU 0) out of every
  // node's GPUs, and a job's GPU links name its node.
  const kpi = (p) => p.evaluate(() => {
    const k = [...document.querySelectorAll('.kpi')].find((e) => /GPUs allocated/i.test(e.querySelector('.label')?.textContent || ''));
    return k ? k.querySelector('.value').textContent.replace(/\s+/g, ' ').trim() : null;
  });
  await waitFor('the fleet\'s allocated GPUs by node on the Jobs page', async () => {
    const r = await fleet.hubJson('/api/gw/v1/jobs?running=1');
    const held = new Set((r.body.data?.jobs || []).flatMap((j) => (j.gpu?.gpus || []).map((g) => `${j.node}/${g}`))).size;
    return held > 8 && (await kpi(page)) === `${held} / ${NODES * 8}`;
  }, 20000);
  const gpuHref = await page.$eval(`.running tr[data-job="${jobsOf(1)[0].job_id}"] a[data-link="gpu"]`, (a) => a.getAttribute('href'));
  assert.match(gpuHref, new RegExp(`^#/gpu/\\d+\\?node=${nodeName(1)}$`));
  await shoot(page, 'jobs-desktop');

  // Alerts: node 7's ECC fault firing with its node (over VictoriaMetrics the hub's own rule
  // evaluation, over Prometheus the store's ALERTS), on node 7's alert page and not on node 8's.
  const eccAlert = await waitFor('GpuUncorrectableEccError of node 7 in /api/v1/alerts', async () => {
    const r = await fleet.hubJson(`/api/v1/alerts?node=${fault}`);
    return (r.body.data?.alerts || []).find((a) => a.labels.alertname === 'GpuUncorrectableEccError' && a.state === 'firing');
  }, 60000);
  assert.equal(eccAlert.labels.instance, fault);
  assert.equal(eccAlert.labels.gpu, '2');
  const others = await fleet.hubJson('/api/v1/alerts?node=node-08');
  assert.ok(!others.body.data.alerts.some((a) => a.labels.alertname === 'GpuUncorrectableEccError'), JSON.stringify(others.body));
  await page.goto(`${fleet.hubUrl}/#/alerts?node=${fault}`);
  const row = '.firing tr[data-alert="GpuUncorrectableEccError"][data-gpu="2"]';
  await page.waitForSelector(row, { timeout: 20000 });
  assert.equal(await page.$eval('#node-select', (s) => s.value), fault);
  await shoot(page, 'alerts-desktop');
  // Over the whole fleet the Findings page's alert names its node, and its GPU link goes there.
  await page.goto(`${fleet.hubUrl}/#/findings?node=`);
  const alertItem = 'article.alert-item[data-alert="GpuUncorrectableEccError"]';
  await page.waitForSelector(`${alertItem} a[href="#/gpu/2?node=${fault}"]`, { timeout: 20000 });
  assert.match(await page.textContent(`${alertItem} .where`), new RegExp(`node ${fault} · GPU 2`));
  await page.goto(`${fleet.hubUrl}/#/alerts?node=node-08`);
  await page.waitForFunction(() => document.querySelector('#node-select')?.value === 'node-08' && document.querySelector('.firing table'), null, { timeout: 20000 });
  await sleep(1000);
  assert.equal(await page.$$eval('.firing tr[data-alert="GpuUncorrectableEccError"]', (r) => r.length), 0);

  // Phone width: the fleet and a node.
  const phone = await launchBrowser(PHONE);
  t.after(() => phone.close());
  const small = await open(phone.context, fleet.hubUrl, '#/fleet', errors);
  await small.waitForFunction((n) => document.querySelectorAll('.tile[data-node]').length === n, NODES, { timeout: 20000 });
  const w = await small.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(w <= PHONE.width, `the fleet page is ${w} px wide on a ${PHONE.width} px screen`);
  await shoot(small, 'fleet-phone');
  await small.goto(`${fleet.hubUrl}/#/node/${fault}`);
  await small.waitForFunction(() => document.querySelectorAll('.tile[data-gpu]').length === 8, null, { timeout: 20000 });
  await shoot(small, 'node-phone');

  const expected404 = (e) => /status of 404 .*\/api\/gw\/v1\/services\)$/.test(e);
  assert.deepEqual(errors.filter((e) => !expected404(e)), []);

  // An agent stops: /api/gw/v1/jobs names its node, whose running jobs still come from the store.
  // The store ends the node's series at its first failed scrape (staleness markers, 2 s here), so
  // 6 s later the store lists none now: the hub's are the store's at the agent's last answer
  // ("as_of"). CI once lost them when the stop took longer than a scrape interval.
  const last = fleet.agents[NODES - 1];
  const stopping = Date.now() / 1000;
  await last.stop();
  await sleep(6000);
  const silent = nodeName(NODES);
  const named = await waitFor(`${silent} named unreachable in /api/gw/v1/jobs`, async () => {
    const r = await fleet.hubJson('/api/gw/v1/jobs');
    return (r.body.data?.nodes_unreachable || []).includes(silent) ? r.body.data : null;
  }, 30000);
  assert.match(named.agent_errors[silent], new RegExp(`the agent of ${silent}`));
  const lastKnown = named.jobs.filter((j) => j.node === silent && j.source === 'store' && j.state === 'RUNNING');
  assert.deepEqual(lastKnown.map((j) => j.job_id).sort(), jobsOf(NODES).map((j) => String(j.job_id)).sort(),
    `its running jobs from the store: ${JSON.stringify(named.jobs.filter((j) => j.node === silent))}`);
  assert.ok(lastKnown.every((j) => j.as_of > stopping - 120 && j.as_of <= Date.now() / 1000), JSON.stringify(lastKnown));
  // The Jobs page lists them (its refresh too) with the time they were last known.
  await page.goto(`${fleet.hubUrl}/#/jobs?node=${silent}`);
  const silentRow = `.running tr[data-job="${jobsOf(NODES)[0].job_id}"] .source`;
  await page.waitForFunction((sel) => /last known \d\d:\d\d:\d\d/.test(document.querySelector(sel)?.textContent || ''), silentRow, { timeout: 20000 });
  await sleep(6000);  // past the page's shared refreshes (running=1)
  assert.match(await page.textContent(silentRow), /store, last known/);
  // Its GPU series are stale: how many GPUs it has is not known now (it read "6 / 0").
  assert.match(await kpi(page), /^\d+ \/ \?$/);
  await shoot(page, 'jobs-silent-node-desktop');
  await small.goto(`${fleet.hubUrl}/#/jobs?node=${silent}`);
  await small.waitForFunction((sel) => /last known/.test(document.querySelector(sel)?.textContent || ''), silentRow, { timeout: 20000 });
  await shoot(small, 'jobs-silent-node-phone');

  // The store stops: the JSON API and the banner say which store and why; the hub stays up.
  await fleet.stopStore();
  const down = await waitFor('503 from /api/snapshot with the store down', async () => {
    const r = await fleet.hubJson(`/api/snapshot?node=${fault}`);
    return r.status === 503 ? r : null;
  }, 30000);
  assert.equal(down.body.status, 'error');
  assert.match(down.body.error, new RegExp(`the store at ${fleet.storeUrl.replace(/[.]/g, '\\.')} did not answer`));
  await page.goto(`${fleet.hubUrl}/#/fleet`);
  await page.waitForFunction(() => !document.getElementById('banner').hidden && document.getElementById('banner').textContent.includes('did not answer'), null, { timeout: 30000 });
  assert.match(await page.textContent('#banner'), /The hub cannot read the fleet: the store at .* did not answer/);
  await shoot(page, 'store-down-desktop');
  const health = await fetch(`${fleet.hubUrl}/healthz`);
  assert.equal(health.status, 200);
  assert.ok(fleet.hub.running());
  console.log(`# ${kind}: whole test ${(Date.now() - began) / 1000} s`);
});
