// Issue 20 on the demo: scripts/demo-sim.sh itself (on a stepped clock instead of the wall clock)
// ends three short training jobs of team vision in its first minutes — two complete, one dies on
// the uncorrectable ECC error the demo adds to GPU 4 — and the console's job and team pages show
// their outcomes and throughput as the agent's API has them: the job page's outcome card
// (outcome, cause, summary, every evidence item) and throughput card (total, average, per
// GPU-hour, per kWh, per unit of money), the team page's success rate, GPU-caused failures and job
// rows, compared value by value with /api/gw/v1/jobs. The ended jobs' scrape targets are not
// "down" (no ScrapeTargetDown, not on /metrics) and the hardware-caused failure raises
// GpuJobKilledByGpuFault. Two of the runs' counters are found through the port they declare
// (GPUWARDEN_METRICS_PORT), one is configured. Pages in Debian's chromium at 1600×1000 and
// 420×900, screenshots in OUTPUT_DIR. Run by ctest (label "browser"):
//   node tests/web/outcomes_demo_test.mjs BUILD/bin/gpuwarden OUTPUT_DIR
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import test from 'node:test';
import { count, pct, plural } from '../../src/web/assets/format.js';
import { Agent, launchBrowser, sleep, waitForPortLine, waitForRunningJobs } from './support.mjs';

const [binary, outDir] = process.argv.slice(2);
if (!binary || !outDir) {
  console.error('usage: node outcomes_demo_test.mjs GPUWARDEN_BINARY OUTPUT_DIR');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const root = new URL('../..', import.meta.url).pathname;
const WIDE = { width: 1600, height: 1000 };
const PHONE = { width: 420, height: 900 };
const VISION = ['vision-sweep-1', 'vision-sweep-2', 'vision-finetune'];

// scripts/demo-sim.sh BUILD_DIR with `serve` on a stepped clock, on 127.0.0.1:0; an Agent whose
// stop() ends the script by its PID (the script then stops what it started, by PID).
async function startDemo() {
  const work = mkdtempSync(join(tmpdir(), 'gw-web-outcomes-'));
  const child = spawn('bash', [join(root, 'scripts/demo-sim.sh'), dirname(dirname(binary)),
    '--sim-clock', 'stepped', '--listen', '127.0.0.1:0', '--data-dir', join(work, 'data')], {
    env: process.env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const agent = new Agent(child, work);
  agent.port = await waitForPortLine(child, agent, 'the demo', 60000);
  agent.url = `http://127.0.0.1:${agent.port}`;
  return agent;
}

async function open(context, agent, hash, errors) {
  const page = await context.newPage();
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push(`${hash}: ${msg.text()}`); });
  page.on('pageerror', (e) => errors.push(`${hash}: uncaught ${e.message}`));
  await page.goto(`${agent.url}/${hash}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
  return page;
}

async function shoot(page, name, width) {
  await sleep(300);
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(w <= width, `${name}: the page is ${w} px wide on a ${width} px screen`);
  await page.screenshot({ path: join(outDir, `${name}.png`), fullPage: true });
}

// The job page's way of writing a figure (pages/job.js): en-US grouping, at most `d` decimals.
const figure = (v, d = 2) => Number(v).toLocaleString('en-US', { maximumFractionDigits: d });
const text = async (locator) => (await locator.textContent()).replace(/\s+/g, ' ').trim();

// The outcome and throughput cards of #/job/<id> against the job's record.
async function checkJobPage(page, rec, currency) {
  const id = rec.job_id;
  const card = page.locator('section.card.outcome');
  await card.waitFor({ timeout: 20000 });
  assert.equal(await card.getAttribute('data-outcome'), rec.outcome.outcome, `${id}: outcome`);
  assert.equal(await card.getAttribute('data-cause'), rec.outcome.cause, `${id}: cause`);
  const said = await text(card.locator('p').first());
  assert.equal(said, `${rec.outcome.outcome.replace(/_/g, ' ')} cause ${rec.outcome.cause.replace(/_/g, ' ')} — ${rec.outcome.summary}`, `${id}: the outcome line`);
  const items = card.locator('ul.evidence-list > li');
  assert.equal(await items.count(), rec.outcome.evidence.length, `${id}: evidence items`);
  for (let i = 0; i < rec.outcome.evidence.length; i++) {
    const e = rec.outcome.evidence[i];
    const li = await text(items.nth(i));
    assert.ok(li.includes(`${e.kind}${e.value !== undefined && e.value !== null ? ` ${e.value}` : ''} — ${e.detail}`), `${id}: evidence ${i}: "${li}" lacks ${JSON.stringify(e)}`);
    if (e.gpu !== undefined) assert.ok(li.includes(`GPU ${e.gpu}`), `${id}: evidence ${i} names GPU ${e.gpu}: "${li}"`);
  }
  const t = rec.throughput;
  const units = plural(t.unit);
  const tp = await text(page.locator('section.card.throughput'));
  for (const want of [`total ${figure(t.total, 0)} ${units}`, `average ${figure(t.avg_per_s)} ${units}/s`,
    `per GPU-hour ${figure(t.per_gpu_hour, 0)} ${units}`, `per kWh ${figure(t.per_kwh, 0)} ${units}`,
    `per ${currency} ${figure(t.per_cost, 0)} ${units}`]) {
    assert.ok(tp.includes(want), `${id}: the throughput card says "${tp}", not "${want}"`);
  }
  assert.ok(tp.includes(t.metric), `${id}: the throughput card names its counter ${t.metric}`);
}

test('the demo ends jobs in its first minutes; the job and team pages show their outcomes and throughput', async (t) => {
  const agent = await startDemo();
  let browser;
  const errors = [];
  try {
    const simNow = async () => (await agent.json('/api/snapshot')).taken_at;
    const startedAt = await simNow();
    const running = await waitForRunningJobs(agent, 6);
    for (const id of VISION) assert.ok(running.some((j) => j.job_id === id && j.team === 'vision'), `${id} runs for team vision`);

    // Simulated time in 10 s steps (the training runs and the simulator's scans of them go on in
    // real time) until the three vision jobs ended with their outcome, at most 8 minutes.
    const records = {};
    let seconds = 0;
    for (; seconds < 480 && VISION.some((id) => !records[id]); seconds += 10) {
      await agent.advance(10);
      await sleep(250);
      const ended = (await agent.json('/api/gw/v1/jobs?team=vision&since=7d')).data.jobs.filter((j) => j.state !== 'RUNNING' && j.outcome);
      for (const j of ended) records[j.job_id] = j;
    }
    assert.deepEqual(Object.keys(records).sort(), [...VISION].sort(), `ended after ${seconds} s:\n${agent.log.slice(-4000)}`);
    // "Within the first minutes": the last one (vision-sweep-2, 4 minutes) is seen ended within
    // 5.5 (the simulator notices a process gone at its next scan, once per real second).
    const took = (await simNow()) - startedAt;
    assert.ok(took <= 330, `the vision jobs took ${took} simulated seconds to end`);
    // Three more minutes: ScrapeTargetDown would be pending (2m) by now if an ended job's target
    // counted as down; GpuJobKilledByGpuFault fires.
    for (let s = 0; s < 180; s += 30) await agent.advance(30);

    // The records: what the demo promises, and internally consistent.
    const rec = {};
    for (const id of VISION) rec[id] = (await agent.json(`/api/gw/v1/jobs/${id}`)).data;
    for (const id of ['vision-sweep-1', 'vision-sweep-2']) {
      assert.equal(rec[id].state, 'ENDED', id);
      assert.equal(rec[id].outcome.outcome, 'completed', id);
      assert.equal(rec[id].outcome.cause, 'unknown', `${id}: a process job has no exit status`);
    }
    const ft = rec['vision-finetune'];
    assert.equal(ft.outcome.outcome, 'failed', JSON.stringify(ft.outcome));
    assert.equal(ft.outcome.cause, 'gpu_fault', JSON.stringify(ft.outcome));
    assert.ok(ft.outcome.evidence.some((e) => e.kind === 'xid' && e.value === 48 && e.gpu === 4), JSON.stringify(ft.outcome.evidence));
    assert.ok(ft.outcome.evidence.some((e) => e.kind === 'ecc_uncorrected' && e.gpu === 4), JSON.stringify(ft.outcome.evidence));
    assert.match(ft.outcome.summary, /XID 48.*GPU 4|GPU 4.*XID 48|ECC.*GPU 4/, ft.outcome.summary);
    for (const id of VISION) {
      const tp = rec[id].throughput;
      assert.ok(tp, `${id} has throughput: ${JSON.stringify(rec[id])}`);
      assert.equal(tp.unit, 'samples', id);
      assert.equal(tp.metric, 'training_samples_total', id);
      for (const k of ['total', 'avg_per_s', 'per_gpu_hour', 'per_kwh', 'per_cost']) assert.ok(tp[k] > 0, `${id}: throughput.${k} = ${tp[k]}`);
      const ran = rec[id].end_time - rec[id].start_time;
      assert.ok(Math.abs(tp.avg_per_s * ran - tp.total) <= 1e-6 * tp.total + 1, `${id}: average × run time = total`);
      assert.ok(Math.abs(tp.per_gpu_hour * (rec[id].gpu.gpu_seconds / 3600) - tp.total) <= 1e-6 * tp.total + 1, `${id}: per GPU-hour × GPU-hours = total`);
      assert.ok(Math.abs(tp.per_cost * rec[id].cost.total_cost - tp.total) <= 1e-6 * tp.total + 1, `${id}: per cost × cost = total`);
    }
    // vision-sweep-1: 90 s at up to 120 samples/s on one GPU (counted as last scraped, every 5 s).
    const sweep = rec['vision-sweep-1'].throughput.total;
    assert.ok(sweep > 0.5 * 90 * 120 && sweep <= 120 * (90 + 5), `vision-sweep-1 trained ${sweep} samples`);

    // The ended jobs' targets are neither scraped nor down.
    const alerts = (await agent.json('/api/v1/alerts')).data.alerts;
    const down = alerts.filter((a) => a.labels.alertname === 'ScrapeTargetDown');
    assert.deepEqual(down.map((a) => `${a.labels.target} ${a.state}`), [], 'no scrape target is down');
    const killed = alerts.filter((a) => a.labels.alertname === 'GpuJobKilledByGpuFault' && a.state === 'firing');
    assert.deepEqual(killed.map((a) => a.labels.team), ['vision'], JSON.stringify(alerts.map((a) => a.labels)));
    // vision-sweep-1's target is configured (scrape.targets, named like the job); the other two
    // runs' endpoints were found through their GPUWARDEN_METRICS_PORT (target job:<id>).
    const metrics = await (await fetch(`${agent.url}/metrics`)).text();
    for (const target of ['vision-sweep-1', 'job:vision-sweep-2', 'job:vision-finetune']) {
      assert.ok(!metrics.includes(`gpuwarden_scrape_up{target="${target}"}`), `${target}: gpuwarden_scrape_up still on /metrics`);
    }
    // Found targets leave nothing behind; a configured one keeps its error counter (and, having
    // `outputs`, its service figures), none of its scrape gauges.
    for (const target of ['job:vision-sweep-2', 'job:vision-finetune']) assert.ok(!metrics.includes(`target="${target}"`), `${target}: still on /metrics`);
    const left = metrics.split('\n').filter((l) => l.includes('target="vision-sweep-1"')).map((l) => l.split('{')[0]);
    assert.ok(left.includes('gpuwarden_scrape_errors_total') && !left.some((m) => /^gpuwarden_scrape_(up|duration_seconds|samples)$/.test(m)), left.join(' '));
    assert.ok(metrics.includes('gpuwarden_scrape_up{target="pretrain"} 1'), 'the running job\'s target is scraped');
    assert.ok(!metrics.includes('target="job:llm-pretrain"'), 'a job with a configured target is not scraped twice');
    assert.ok(agent.log.includes('job vision-finetune declares its counter on 127.0.0.1:'), 'vision-finetune found by its port');
    const targets = (await agent.json('/api/v1/targets')).data.activeTargets;
    assert.equal(targets.find((x) => x.scrapePool === 'vision-sweep-1')?.health, 'unknown', 'vision-sweep-1 in /api/v1/targets');

    const currency = (await agent.json('/api/gw/v1/teams')).data.currency;
    assert.equal(currency, 'USD');
    browser = await launchBrowser(WIDE);
    const ctx = browser.context;

    await t.test('job pages: outcome and throughput cards as the records have them', async () => {
      for (const id of VISION) {
        const page = await open(ctx, agent, `#/job/${id}`, errors);
        await checkJobPage(page, rec[id], currency);
        if (id !== 'vision-sweep-2') await shoot(page, `job-${id}-1600`, WIDE.width);
        await page.setViewportSize(PHONE);
        await sleep(200);
        await checkJobPage(page, rec[id], currency);
        if (id !== 'vision-sweep-2') await shoot(page, `job-${id}-420`, PHONE.width);
        await page.close();
      }
    });

    await t.test('team page: success rate, GPU-caused failures and the job rows from the API', async () => {
      const jobs = (await agent.json('/api/gw/v1/jobs?team=vision&since=7d')).data.jobs;
      const withOutcome = jobs.filter((j) => j.state !== 'RUNNING' && j.outcome);
      assert.equal(withOutcome.length, 3);
      const completed = withOutcome.filter((j) => j.outcome.outcome === 'completed').length;
      const gpuCaused = withOutcome.filter((j) => j.outcome.cause === 'gpu_fault').length;
      assert.equal(completed, 2);
      assert.equal(gpuCaused, 1);
      // The outcomes in the order the API lists the jobs (the page's order too).
      const tally = {};
      for (const j of withOutcome) tally[j.outcome.outcome] = (tally[j.outcome.outcome] || 0) + 1;
      assert.deepEqual(tally, { completed: 2, failed: 1 });
      const outcomesLine = Object.entries(tally).map(([o, n]) => `${n} ${o}`).join(' · ');
      for (const size of [WIDE, PHONE]) {
        const page = await open(ctx, agent, '#/team/vision', errors);
        await page.setViewportSize(size);
        const kpi = (label) => page.locator('.kpi', { has: page.locator('.label', { hasText: new RegExp(`^${label}$`) }) });
        await kpi('Success rate').waitFor({ timeout: 20000 });
        assert.equal(await text(kpi('Success rate').locator('.value')), pct(completed / withOutcome.length).replace(/\u00a0/g, ' '));
        assert.equal(await text(kpi('Success rate').locator('.sub')), outcomesLine);
        assert.equal(await text(kpi('GPU-caused failures').locator('.value')), count(gpuCaused));
        assert.ok((await kpi('GPU-caused failures').getAttribute('class')).includes('critical'));
        assert.equal(await text(kpi('GPU-caused failures').locator('.sub')), `of ${withOutcome.length} ended: a GPU fault ended them`);
        for (const j of withOutcome) {
          const row = await text(page.locator(`table.team-jobs tr[data-job="${j.job_id}"]`));
          assert.ok(row.includes(`${j.outcome.outcome.replace(/_/g, ' ')} · ${j.outcome.cause.replace(/_/g, ' ')}`), `${j.job_id}: "${row}"`);
          assert.ok(row.includes(`${figure(j.throughput.avg_per_s, 1)} ${plural(j.throughput.unit)}/s`), `${j.job_id}: "${row}" lacks its throughput`);
        }
        // The hardware-caused failure's alert, on the team's page.
        assert.equal(await page.locator('table.team-alerts tr[data-alert="GpuJobKilledByGpuFault"]').count(), 1);
        await shoot(page, `team-vision-${size.width}`, size.width);
        await page.close();
      }
    });
    assert.deepEqual(errors, [], 'console errors');
  } finally {
    if (browser) await browser.close();
    await agent.stop();
  }
});
