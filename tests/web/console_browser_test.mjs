// Browser tests of the web console: a real `gpuwarden serve` on a simulated fleet, the pages in
// Debian's chromium (headless, driven by playwright-core). Run by ctest (label "browser"):
//   node tests/web/console_browser_test.mjs BUILD/bin/gpuwarden OUTPUT_DIR
// Screenshots of every page land in OUTPUT_DIR (build/test-output/web/). The fleet test also runs
// a simulated inference service (gw-inference-sim, beside the binary) as a priced scrape target,
// for the Teams page's Services table.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import { count, duration, money } from '../../src/web/assets/format.js';
import { Agent, hostJob, InferenceService, launchBrowser, sleep, waitForRunningJobs } from './support.mjs';

const [binary, outDir] = process.argv.slice(2);
if (!binary || !outDir) {
  console.error('usage: node console_browser_test.mjs GPUWARDEN_BINARY OUTPUT_DIR');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const here = new URL('.', import.meta.url).pathname;
// Optional endpoints the console probes: their 404 is an expected answer, not an error.
const OPTIONAL = ['/api/gw/v1/findings'];

// Opens `hash` in a fresh page, collecting console errors and uncaught exceptions.
async function open(context, agent, hash) {
  const page = await context.newPage();
  const errors = [];
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const url = msg.location().url || '';
    if (/404/.test(msg.text()) && OPTIONAL.some((p) => url.endsWith(p))) return;
    errors.push(`${msg.text()} (${url})`);
  });
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  await page.goto(`${agent.url}/${hash}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
  return { page, errors };
}

async function shoot(page, name) {
  await sleep(300);  // let canvases settle after the last refresh
  await page.screenshot({ path: join(outDir, `${name}.png`), fullPage: true });
}

// squeue --json as Slurm 22.05 writes it, for a stand-in squeue: job 11 runs here on GPU 5, jobs 12,
// 14 and 15 wait (15 the longest, at the lowest priority), job 13 finished here. Times around `now`.
function squeueAnswer(node, now) {
  const job = (id, name, state, user, account, extra) => ({
    job_id: id, name, job_state: state, user_name: user, account, partition: 'gpu', nodes: '', submit_time: now - 900,
    eligible_time: now - 900, start_time: 0, end_time: 0, gres_detail: [], ...extra });
  return JSON.stringify({ meta: {}, errors: [], jobs: [
    job(11, 'protein-fold', 'RUNNING', 'alice', 'physics', { nodes: node, start_time: now - 600, end_time: now + 86400, gres_detail: ['gpu:1(IDX:5)'], tres_per_node: 'gres:gpu:1' }),
    job(12, 'sweep-a', 'PENDING', 'bob', 'bio', { state_reason: 'Resources', priority: 200, tres_per_job: 'gres:gpu:4', tres_req_str: 'cpu=1,node=1,billing=1,gres/gpu=4' }),
    job(14, 'sweep-b', 'PENDING', 'bob', 'bio', { state_reason: 'Priority', priority: 100, tres_per_node: 'gres:gpu:1' }),
    job(15, 'render', 'PENDING', 'dave', 'physics', { state_reason: 'QOSMaxGRESPerUser', priority: 50, submit_time: now - 3700, eligible_time: now - 3600, tres_per_node: 'gres:gpu:2' }),
    job(13, 'preprocess', 'COMPLETED', 'carol', 'ml', { nodes: node, submit_time: now - 4000, eligible_time: now - 4000, start_time: now - 3600, end_time: now - 1200, exit_code: 0, gres_detail: ['gpu:1(IDX:4)'], tres_per_node: 'gres:gpu:1' }),
  ] });
}

test('every page loads without console errors and shows the simulated fleet', async () => {
  const work = mkdtempSync(join(tmpdir(), 'gw-web-demo-'));
  const squeueNow = Math.floor(Date.now() / 1000);
  const eligibleAt = { 12: squeueNow - 900, 14: squeueNow - 900, 15: squeueNow - 3600 };
  writeFileSync(join(work, 'squeue.json'), squeueAnswer(hostname().split('.')[0], squeueNow));
  writeFileSync(join(work, 'squeue'), `#!/bin/sh\ncat '${join(work, 'squeue.json')}'\n`, { mode: 0o755 });
  // The service "llm" on GPU 4, scraped with its 2xx requests as outputs, its GPU priced.
  const stateDir = join(work, 'state');
  mkdirSync(stateDir);
  const llm = await InferenceService.start(binary, { gpu: 4, stateDir });
  writeFileSync(join(work, 'gpuwarden.yaml'), `jobs:\n  scheduler: slurm\n  squeue_command: [${join(work, 'squeue')}, --json]\n  poll_interval: 200ms\n  idle_window: 5m\nteams:\n  accounts: {physics: science, ml: research}\n`
    + `scrape:\n  targets:\n    - name: llm\n      url: '${llm.url}'\n      gpus: [4]\n      outputs: 'inference_requests_total{code=~"2.."}'\n      output_unit: request\n`
    + 'governance:\n  prices:\n    gpu_hour: {default: 2.5}\n    energy_kwh: 0.3\n    currency: EUR\n');
  const jobs = [
    hostJob('training', '0,1,2,3', 'llm-pretrain', 'research'),
    hostJob('idle_allocated', '7', 'notebook-7', 'analytics'),
    hostJob('inference', '6', 'eval-sweep', 'research'),
  ];
  let agent;
  try {
    agent = await Agent.start(binary, ['--simulate', join(here, 'console-demo.yaml'), '--sim-clock', 'stepped', '--config', join(work, 'gpuwarden.yaml')],
      { env: { GPUWARDEN_SIM_STATE_DIR: stateDir } });
  } catch (e) {
    jobs.forEach((j) => j.kill('SIGTERM'));
    await llm.stop();
    throw e;
  }
  let browser;
  try {
    await waitForRunningJobs(agent, 4);
    // 12 simulated minutes, then the evaluation ends (a finished record), then on to 27 minutes:
    // GPU 3's cooling degrades from 20 min (SW thermal slowdown).
    for (let t = 0; t < 720; t += 240) await agent.advance(240);
    jobs[2].kill('SIGTERM');
    await sleep(300);
    for (let t = 720; t < 1620; t += 300) await agent.advance(300);
    // By now the service has been scraped on simulated time for 27 minutes: it has a cost per output.
    const services = (await agent.json('/api/gw/v1/services')).data;
    assert.ok(services.services.find((s) => s.target === 'llm')?.cost_per_1k_outputs > 0,
      `no cost per output for llm: ${JSON.stringify(services)}\n${llm.log}\n${agent.log}`);

    browser = await launchBrowser();
    const checks = {
      fleet: async (page) => {
        await page.waitForSelector('.tile .spark');
        assert.equal(await page.locator('.tile').count(), 8);
        for (let i = 0; i < 8; i++) assert.match(await page.locator(`.tile[data-gpu="${i}"] .model`).innerText(), /NVIDIA/);
        assert.match(await page.locator('.tile[data-gpu="0"] .who').innerText(), /llm-pretrain/);
        assert.match(await page.locator('.tile[data-gpu="7"] .who').innerText(), /notebook-7/);
        assert.match(await page.locator('.kpis').innerText(), /GPUS UP\s*8\s*\/\s*8/i);
      },
      'gpu/3': async (page) => {
        await page.waitForSelector('.chart[data-empty="false"]');
        assert.ok(await page.locator('.chart[data-empty="false"]').count() >= 6);
        assert.match(await page.locator('h1').innerText(), /GPU 3 · NVIDIA H100/);
        // Its cooling failure (20-32 min) shows as a thermal slowdown lane on the time axis.
        await page.waitForSelector('.timeline .lane[data-kind="throttle"]');
        assert.match(await page.locator('.timeline').innerText(), /thermal/i);
      },
      jobs: async (page) => {
        await page.waitForSelector('tr[data-job="llm-pretrain"]');
        assert.match(await page.locator('.running tr[data-job="llm-pretrain"]').innerText(), /research/);
        assert.match(await page.locator('.running').innerText(), /protein-fold/);
        await page.waitForSelector('.finished tr[data-job="eval-sweep"]');
        // The queued table: the API's pending jobs, longest wait first, each wait the poll's time
        // less the job's eligible time.
        await page.waitForSelector('.queued tr[data-job="15"]');
        assert.match(await page.locator('.queued').innerText(), /3 jobs waiting/);
        const queue = (await agent.json('/api/gw/v1/queue')).data;
        assert.equal(queue.known, true);
        const api = Object.fromEntries(queue.jobs.map((j) => [j.job_id, j]));
        const polledAt = Math.floor(Number(await page.locator('.queuehead').getAttribute('data-polled-at')));
        const rows = await page.locator('.queued tbody tr').evaluateAll((trs) => trs.map((tr) => ({
          id: tr.dataset.job, wait: Number(tr.dataset.wait), cells: [...tr.cells].map((c) => c.innerText.trim()) })));
        assert.deepEqual(rows.map((r) => r.id), ['15', '12', '14']);
        const expected = { 15: ['3', 'dave', 'science', '2', 'QOSMaxGRESPerUser'], 12: ['1', 'bob', 'unassigned', '4', 'Resources'], 14: ['2', 'bob', 'unassigned', '1', 'Priority'] };
        for (const r of rows) {
          const [position, user, team, gpus, reason] = expected[r.id];
          assert.deepEqual([r.cells[0], r.cells[2], r.cells[3], r.cells[4], r.cells[5], r.cells[9]], [position, user, team, 'gpu', gpus, reason], r.id);
          assert.deepEqual([String(api[r.id].position), api[r.id].user, api[r.id].team, String(api[r.id].gpus), api[r.id].reason], [position, user, team, gpus, reason], r.id);
          assert.equal(r.wait, polledAt - eligibleAt[r.id], r.id);
          assert.equal(r.cells[8].split('\n')[0], duration(r.wait), r.id);
        }
        // The team filter and the search apply to the queue.
        await page.selectOption('.filters select', 'science');
        assert.deepEqual(await page.locator('.queued tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.job)), ['15']);
        await page.selectOption('.filters select', '');
        await page.fill('.filters input', 'sweep');
        assert.deepEqual(await page.locator('.queued tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.job)), ['12', '14']);
        await page.fill('.filters input', '');
      },
      teams: async (page) => {
        await page.waitForSelector('tr[data-team="research"]');
        assert.match(await page.locator('tr[data-team="research"]').innerText(), /research\s+4/);
        await page.waitForSelector('tr[data-team="analytics"]');
        // Services: the page's figures and the API's at the same time (the stepped clock stands
        // still), shown as the console formats them.
        const row = page.locator('.services tr[data-target="llm"]');
        await row.waitFor();
        const shown = {
          cost: await row.getAttribute('data-cost'), per1k: await row.getAttribute('data-cost-per-1k'),
          costText: await row.locator('td.cost').innerText(), outputsText: await row.locator('td.outputs').innerText(),
          per1kText: await row.locator('td.per1k').innerText(), gpus: await row.locator('td').nth(1).innerText(),
        };
        const api = (await agent.json('/api/gw/v1/services')).data;
        assert.equal(api.services.length, 1, JSON.stringify(api));
        const s = api.services[0];
        assert.equal(s.target, 'llm');
        assert.ok(s.cost > 0, JSON.stringify(s));
        assert.ok(Number(shown.cost) > 0, shown.cost);
        assert.equal(Number(shown.cost), s.cost);
        assert.equal(shown.costText.split('\n')[0], money(s.cost, 'EUR'));
        assert.equal(shown.outputsText, `${count(s.outputs)} requests`);
        assert.equal(Number(shown.per1k), s.cost_per_1k_outputs);
        assert.equal(shown.per1kText.split('\n')[0], `${money(s.cost_per_1k_outputs, 'EUR')} / 1k requests`);
        assert.equal(shown.gpus.trim(), '4');
      },
      alerts: async (page) => {
        await page.waitForSelector('.history .lane');
        assert.ok(await page.locator('.history .lane').count() >= 1);
        await page.waitForSelector('.rules td');
      },
      findings: async (page) => {
        await page.waitForSelector('[data-missing="findings"], .finding, .findings-empty, .body .empty');
      },
    };
    for (const [hash, check] of Object.entries(checks)) {
      const { page, errors } = await open(browser.context, agent, `#/${hash}`);
      await check(page);
      await shoot(page, hash.replace('/', '-'));
      assert.deepEqual(errors, [], `console errors on #/${hash}`);
      await page.close();
    }
    // The same fleet on a wall screen, and in the light theme.
    const { page, errors } = await open(browser.context, agent, '#/fleet');
    await page.setViewportSize({ width: 2560, height: 1440 });
    await shoot(page, 'fleet-wall');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.click('#theme');
    await shoot(page, 'fleet-light');
    await page.click('#theme');
    // Navigating by clicking a tile opens that GPU, and the page refreshes live.
    await page.click('.tile[data-gpu="5"]');
    await page.waitForSelector('.chart[data-empty="false"]');
    assert.match(await page.locator('h1').innerText(), /GPU 5/);
    const before = await page.locator('#live').innerText();
    await agent.advance(60);
    await page.waitForFunction((text) => document.getElementById('live').innerText !== text, before, { timeout: 10000 });
    assert.deepEqual(errors, []);
  } finally {
    if (browser) await browser.close();
    jobs.forEach((j) => j.kill('SIGTERM'));
    await agent.stop();
    await llm.stop();
    rmSync(work, { recursive: true, force: true });
  }
});

test('a cooling failure turns its GPU tile to a problem state and lists the alert', async () => {
  const agent = await Agent.start(binary, ['--simulate', 'cooling-failure', '--sim-clock', 'stepped']);
  let browser;
  try {
    let firing = [];
    for (let t = 0; t < 1800 && !firing.length; t += 60) {
      await agent.advance(60);
      firing = await agent.firing(0);
    }
    assert.ok(firing.length > 0, `no alert fired on GPU 0 within 30 simulated minutes\n${agent.log}`);
    const names = firing.map((a) => a.labels.alertname);

    browser = await launchBrowser();
    let { page, errors } = await open(browser.context, agent, '#/fleet');
    const tile = page.locator('.tile[data-gpu="0"]');
    assert.match(await tile.getAttribute('data-state'), /^(warning|critical)$/);
    for (const name of names) assert.equal(await tile.locator(`[data-alert="${name}"]`).count(), 1, name);
    assert.match(await page.locator('.problems').innerText(), new RegExp(names[0]));
    await shoot(page, 'fault-fleet');
    assert.deepEqual(errors, []);
    await page.close();

    ({ page, errors } = await open(browser.context, agent, '#/alerts'));
    for (const name of names) assert.ok(await page.locator(`.firing tr[data-alert="${name}"][data-gpu="0"]`).count() >= 1, name);
    await page.waitForSelector('.history .lane');
    await shoot(page, 'fault-alerts');
    assert.deepEqual(errors, []);
    await page.close();

    // No scrape target here: the Services table says so in one line.
    ({ page, errors } = await open(browser.context, agent, '#/teams'));
    await page.waitForSelector('.services .services-none');
    assert.match(await page.locator('.services').innerText(), /^No service is configured/);
    assert.equal(await page.locator('.services table').count(), 0);
    await shoot(page, 'teams-no-services');
    assert.deepEqual(errors, []);
    await page.close();

    ({ page, errors } = await open(browser.context, agent, '#/gpu/0?range=15m'));
    await page.waitForSelector('.timeline .lane[data-kind="alert"]');
    await shoot(page, 'fault-gpu-0');
    assert.deepEqual(errors, []);
  } finally {
    if (browser) await browser.close();
    await agent.stop();
  }
});
