// The console as one place to work in (issue 17): every layer linked — a firing alert to its job,
// its GPU, its team, the reclaim decision and the finding, and back — and a check for each defect a
// new user found on the demo. A real `gpuwarden serve` on the demo fleet (console-demo.yaml) with
// host processes as jobs, quotas, prices and a dry-run reclaim policy, stepped simulated time,
// the pages in Debian's chromium at 1600×1000 and 420×900. Run by ctest (label "browser"):
//   node tests/web/console_crosslayer_test.mjs BUILD/bin/gpuwarden OUTPUT_DIR
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import { duration } from '../../src/web/assets/format.js';
import { Agent, hostJob, launchBrowser, sleep, waitForRunningJobs } from './support.mjs';

const [binary, outDir] = process.argv.slice(2);
if (!binary || !outDir) {
  console.error('usage: node console_crosslayer_test.mjs GPUWARDEN_BINARY OUTPUT_DIR');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const here = new URL('.', import.meta.url).pathname;
const WIDE = { width: 1600, height: 1000 };
const PHONE = { width: 420, height: 900 };

// "1h 2m", "3m 4s", "5s", "2d 1h" (format.js duration) back to seconds.
function seconds(text) {
  let s = 0;
  for (const [, n, u] of text.matchAll(/(\d+)([dhms])/g)) s += Number(n) * { d: 86400, h: 3600, m: 60, s: 1 }[u];
  return s;
}

async function open(context, agent, hash, errors) {
  const page = await context.newPage();
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push(`${hash}: ${msg.text()} (${msg.location().url || ''})`); });
  page.on('pageerror', (e) => errors.push(`${hash}: uncaught ${e.message}`));
  await page.goto(`${agent.url}/${hash}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
  return page;
}

async function shoot(page, name) {
  await sleep(300);
  await page.screenshot({ path: join(outDir, `${name}.png`), fullPage: true });
}

// The page is no wider than the screen (tables scroll inside their cards).
async function fitsWidth(page, width, what) {
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(w <= width, `${what}: the page is ${w} px wide on a ${width} px screen`);
}

test('cross-layer navigation, reclaim, findings, and the defects of the demo', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'gw-web-xl-'));
  writeFileSync(join(work, 'gpuwarden.yaml'), [
    'jobs:', '  idle_window: 10m',
    'governance:', '  reclaim:', '    - {idle_for: 10m, grace: 5m, action: dry-run}',
    '  quotas:', '    research: {gpus: 3}', '    analytics: {gpu_hours: 4, period: 1d}',
    '  prices:', '    gpu_hour: {H100: 2.99, A100: 1.79, H200: 3.59, L40S: 0.99, default: 1.50}', '    energy_kwh: 0.15', '    currency: USD', ''].join('\n'));
  const jobs = [
    hostJob('training', '0,1,2,3', 'llm-pretrain', 'research', 900),
    hostJob('idle_allocated', '7', 'notebook-7', 'analytics', 900),
    hostJob('inference', '6', 'eval-sweep', 'research', 900),
  ];
  let agent;
  try {
    agent = await Agent.start(binary, ['--simulate', join(here, 'console-demo.yaml'), '--sim-clock', 'stepped', '--config', join(work, 'gpuwarden.yaml')]);
  } catch (e) {
    jobs.forEach((j) => j.kill('SIGTERM'));
    throw e;
  }
  let browser;
  const errors = [];
  try {
    await waitForRunningJobs(agent, 3);
    browser = await launchBrowser(WIDE);
    const ctx = browser.context;

    // --- The first warning (research over its quota after 15 minutes): never contradicted by
    // "nothing needs attention", whether or not the findings service has something yet.
    let early = [];
    let elapsed = 0;
    for (; elapsed < 1500 && !early.length; elapsed += 30) {
      await agent.advance(30);
      early = (await agent.firing()).filter((a) => ['critical', 'warning'].includes(a.labels.severity));
    }
    assert.ok(early.length > 0, `no warning fired in the first 25 simulated minutes\n${agent.log}`);
    await t.test('findings: firing warnings are on the page from the first minutes', async () => {
      const page = await open(ctx, agent, '#/findings', errors);
      await page.waitForSelector('.findings-body .finding', { timeout: 10000 });
      const text = await page.locator('.findings-body').innerText();
      assert.doesNotMatch(text, /Nothing needs attention|No finding\b(?! is active)/);
      for (const a of early) assert.ok(await page.locator(`[data-alert="${a.labels.alertname}"]`).count() >= 1, `firing ${a.labels.alertname} not on the findings page`);
      await page.close();
    });

    // --- On to 37 minutes: the notebook is noticed (10 min idle), decided on (dry-run, +5 min),
    // and GpuJobHoldingGpusIdle fires (30 min idle + 2 min); research holds 4 GPUs on a quota of 3.
    for (; elapsed < 2220; elapsed += 60) await agent.advance(60);
    const reclaim = (await agent.json('/api/gw/v1/reclaim?job=notebook-7')).data;
    const dry = reclaim.decisions.find((d) => d.stage === 'action' && d.action === 'dry-run');
    assert.ok(dry, `no dry-run decision for notebook-7: ${JSON.stringify(reclaim)}`);
    assert.ok(reclaim.decisions.some((d) => d.stage === 'notice'), JSON.stringify(reclaim));
    const idleAlert = (await agent.firing()).find((a) => a.labels.alertname === 'GpuJobHoldingGpusIdle' && a.labels.job_id === 'notebook-7');
    assert.ok(idleAlert, `GpuJobHoldingGpusIdle is not firing for notebook-7\n${JSON.stringify(await agent.firing())}`);

    // --- The walk: alert -> job -> GPU -> team -> reclaim -> finding, and back.
    await t.test('the walk: alert, job, GPU, team, reclaim decision, finding, and back', async () => {
      const page = await open(ctx, agent, '#/alerts', errors);
      const row = page.locator('.firing tr[data-alert="GpuJobHoldingGpusIdle"][data-job="notebook-7"]');
      await row.waitFor();
      assert.equal(await row.locator('a[data-link="team"]').innerText(), 'analytics');
      await row.locator('a[data-link="job"]').click();
      await page.waitForFunction(() => location.hash === '#/job/notebook-7');
      await page.waitForSelector('.reclaim tr[data-stage="action"]');
      assert.match(await page.locator('h1').innerText(), /notebook-7/);
      // Its GPU charts over its lifetime, its statistics, its cost, its alert, its reclaim history.
      await page.waitForSelector('.job-charts .chart[data-empty="false"]');
      const kpis = await page.locator('.kpis').innerText();
      assert.match(kpis, /COST[\s\S]*USD/i);
      assert.match(kpis, /IDLE SHARE\s*\d+/i);
      assert.equal(await page.locator('.job-body tr[data-alert="GpuJobHoldingGpusIdle"]').count(), 1);
      const decision = page.locator('.reclaim tr[data-stage="action"][data-action="dry-run"]');
      assert.equal(await decision.count(), 1);
      assert.match(await decision.innerText(), /dry-run/);
      assert.match(await page.locator('.reclaim').innerText(), /idle 10m → notice, grace 5m → dry-run/);
      // Only this job's decisions (GET /api/gw/v1/reclaim?job=).
      assert.deepEqual([...new Set(await page.locator('.reclaim tbody tr[data-job]').evaluateAll((trs) => trs.map((tr) => tr.dataset.job)))], ['notebook-7']);
      await shoot(page, 'xl-job');
      // Its GPU.
      await page.locator('.pagehead .gpus a[data-link="gpu"]').first().click();
      await page.waitForFunction(() => location.hash === '#/gpu/7');
      await page.waitForSelector('.reclaim tr[data-stage="action"][data-action="dry-run"]');
      assert.match(await page.locator('.pagehead').innerText(), /notebook-7/);
      // A warning about the job on it is not contradicted by an "ok" GPU.
      assert.equal(await page.locator('h1 .pill').textContent(), 'warning');
      // The job's alert is on its GPU's page, with what to do (the runbook), not a time.
      const todo = page.locator('.gpu-problems tr[data-alert="GpuJobHoldingGpusIdle"] td.todo');
      assert.match(await todo.innerText(), /Check the job's own output/);
      assert.doesNotMatch(await todo.innerText(), /ago$/);
      await page.waitForSelector('.timeline .lane[data-kind="alert"]');
      assert.doesNotMatch(await page.locator('.timeline').innerText(), /No throttling and no alert/);
      await shoot(page, 'xl-gpu-7');
      // Its team.
      await page.locator('.pagehead a[data-link="team"]').first().click();
      await page.waitForFunction(() => location.hash === '#/team/analytics');
      await page.waitForSelector('.team-jobs tr[data-job="notebook-7"]');
      await page.waitForSelector('.reclaim tr[data-stage="action"][data-action="dry-run"]');
      assert.match(await page.locator('.kpis').innerText(), /GPU-HOURS THIS PERIOD\s*[\d.]+\s*\/\s*4/i);
      assert.match(await page.locator('.kpis').innerText(), /IDLE COST\s*[\d.,]+\s*USD/i);
      await shoot(page, 'xl-team-analytics');
      // The fleet's reclaim page lists the decision with its evidence and policy.
      await page.goto(`${agent.url}/#/reclaim`);
      await page.waitForSelector('.reclaim-decisions tr[data-job="notebook-7"][data-stage="action"]');
      assert.match(await page.locator('.reclaim-decisions tr[data-job="notebook-7"][data-stage="action"]').innerText(), /GPU 7: util \d+\s%, idle/);
      // The finding about the notebook, from its job's page, with readable evidence.
      await page.goto(`${agent.url}/#/findings`);
      await page.waitForSelector('.findings-body .finding');
      const body = await page.locator('.findings-body').innerText();
      assert.doesNotMatch(body, /\{"/, 'evidence shown as raw JSON');
      const findings = (await agent.json('/api/gw/v1/findings')).data.findings.filter((f) => f.active);
      const layers = await page.locator('.findings-body section.layer').evaluateAll((s) => s.map((x) => x.dataset.layer));
      for (const f of findings) {
        const card = page.locator(`.finding[data-id="${f.id}"]`);
        assert.equal(await card.count(), 1, f.id);
        assert.ok(layers.includes(f.layer), `${f.id}: no ${f.layer} group in ${layers}`);
        if (f.subject.gpu) assert.equal(await card.locator(`a[href="#/gpu/${f.subject.gpu}"]`).count() >= 1, true, `${f.id}: no link to GPU ${f.subject.gpu}`);
        if (f.subject.job) assert.equal(await card.locator(`a[href="#/job/${encodeURIComponent(f.subject.job)}"]`).count(), 1, `${f.id}: no link to job ${f.subject.job}`);
        if (f.subject.team) assert.equal(await card.locator(`a[href="#/team/${encodeURIComponent(f.subject.team)}"]`).count(), 1, `${f.id}: no link to team`);
        for (const e of f.evidence.filter((x) => x.query)) assert.ok(await card.locator('a.promql').count() >= 1, `${f.id}: no chart link for ${e.query}`);
      }
      const withQuery = page.locator('.findings-body a.promql').first();
      if (await withQuery.count()) {
        await withQuery.click();
        await page.waitForFunction(() => location.hash.startsWith('#/query?'));
        await page.waitForSelector('.qchart .chart[data-empty="false"]');
        await page.goBack();
        await page.waitForFunction(() => location.hash === '#/findings');
      }
      // And back along the way it came.
      await page.goBack();
      await page.waitForFunction(() => location.hash === '#/reclaim');
      await page.goBack();
      await page.waitForFunction(() => location.hash === '#/team/analytics');
      await page.goBack();
      await page.waitForFunction(() => location.hash === '#/gpu/7');
      await page.goBack();
      await page.waitForFunction(() => location.hash === '#/job/notebook-7');
      await page.waitForSelector('.reclaim tr[data-stage="action"]');
      await page.close();
    });

    // --- Fleet: the reclaim loop is one line among the problems; a job's alert links to its job.
    await t.test('fleet: reclaim line and job alerts linked', async () => {
      const p = await open(ctx, agent, '#/fleet', errors);
      await p.waitForSelector('.problems .reclaim-row a[href="#/reclaim"]');
      assert.match(await p.locator('.problems .reclaim-row').innerText(), /dry-run decision .* notebook-7/);
      assert.ok(await p.locator('.problems a[href="#/job/notebook-7"]').count() >= 1, 'the job alert does not link to its job');
      assert.equal(await p.locator('.tile[data-gpu="7"]').getAttribute('data-state'), 'warning');
      await p.close();
    });

    // --- Processes on the GPU page: the snapshot's fields, "–" where absent.
    await t.test('processes: the snapshot\'s fields, "–" where absent', async () => {
      const p = await open(ctx, agent, '#/gpu/7', errors);
      await p.waitForSelector('.gpu-processes tr[data-pid]');
      const snap = (await agent.json('/api/snapshot')).gpus.find((g) => g.index === 7);
      const heads = await p.locator('.gpu-processes th').allInnerTexts();
      for (const h of ['NAME', 'USER', 'COMMAND', 'SM USE', 'HOST CPU', 'HOST MEMORY']) assert.ok(heads.map((x) => x.toUpperCase()).includes(h), `${h} in ${heads}`);
      for (const proc of snap.processes) {
        const cells = await p.locator(`.gpu-processes tr[data-pid="${proc.pid}"] td`).allInnerTexts();
        assert.equal(cells[1], proc.name ?? '–', `name of ${proc.pid}`);
        assert.equal(cells[2], proc.user ?? '–', `user of ${proc.pid}`);
        if (proc.command === undefined) assert.equal(cells[3], '–');
      }
      await p.close();
    });

    // --- Teams: research over its quota of 3 is highlighted with a real bar; the GPU-hour quota
    // of analytics is shown; costs carry their currency; the table stays inside its card.
    await t.test('teams: quota bars, the GPU-hour quota, currency, no overflow', async () => {
      const p = await open(ctx, agent, '#/teams', errors);
      await p.waitForSelector('tr[data-team="research"] .quota-bar');
      assert.equal(await p.locator('tr[data-team="research"]').getAttribute('data-over'), 'true');
      const bar = await p.locator('tr[data-team="research"] .quota-bar .bar > span').boundingBox();
      assert.ok(bar.width > 40, `quota bar ${bar.width} px wide`);
      const research = (await agent.json('/api/gw/v1/teams')).data.teams.find((x) => x.team === 'research');
      assert.ok(research.allocated_gpus > 3, JSON.stringify(research));
      assert.equal(await p.locator('tr[data-team="research"] .quota-bar .val').innerText(), `${research.allocated_gpus} / 3 GPUs`);
      assert.match(await p.locator('tr[data-team="analytics"]').innerText(), /\/ 4 GPU-h/);
      assert.match(await p.locator('tr[data-team="research"] td.cost').innerText(), /USD/);
      const fits = await p.locator('.teams-table').evaluate((t) => t.closest('.card').getBoundingClientRect().right <= document.documentElement.clientWidth);
      assert.ok(fits, 'the teams card is wider than the page');
      assert.equal(await p.locator('tr[data-team="research"] a[href="#/team/research"]').count(), 1);
      await shoot(p, 'xl-teams');
      await p.close();
    });

    // --- Jobs: links to job pages, a cost column, sorting and the filter in the URL.
    await t.test('jobs: job links, cost, sorting, filter in the URL', async () => {
      const p = await open(ctx, agent, '#/jobs', errors);
      await p.waitForSelector('.running tr[data-job="llm-pretrain"]');
      assert.equal(await p.locator('.running tr[data-job="llm-pretrain"] a[href="#/job/llm-pretrain"]').count(), 1);
      assert.match(await p.locator('.running tr[data-job="llm-pretrain"] td.cost').innerText(), /USD/);
      await p.locator('.running button[data-sort="cost"]').click();
      await p.waitForFunction(() => /sort=cost/.test(location.hash));
      const costs = await p.locator('.running tbody tr td.cost').allInnerTexts();
      const values = costs.map((c) => Number(c.replace(/[^\d.]/g, '')));
      assert.deepEqual(values, [...values].sort((a, b) => b - a), `not sorted by cost: ${costs}`);
      await p.selectOption('.filters select', 'analytics');
      await p.waitForFunction(() => /team=analytics/.test(location.hash));
      const url = p.url();
      await p.close();
      const again = await ctx.newPage();
      await again.goto(url);
      await again.waitForSelector('body[data-ready="true"]');
      await again.waitForSelector('.running tr[data-job="notebook-7"]');
      assert.equal(await again.locator('.filters select').inputValue(), 'analytics');
      assert.equal(await again.locator('.running tr[data-job="llm-pretrain"]').count(), 0);
      await again.close();
    });

    // --- Alert history: an open firing alert lasted no longer than the data says.
    await t.test('alert history: durations from the data', async () => {
      const p = await open(ctx, agent, '#/alerts', errors);
      // The run still going must show as open although the stepped clock stands still and the page
      // never refetches its history (alerts.js history(): the last bucket may hold no evaluation yet).
      await p.waitForSelector('.history-table tr[data-open="true"][data-state="firing"]', { timeout: 60000 });
      const now = (await agent.json('/api/snapshot')).taken_at;
      const firing = await agent.firing();
      const rows = await p.locator('.history-table tr[data-open="true"][data-state="firing"]').evaluateAll((trs) => trs.map((tr) => ({ name: tr.dataset.alert, lasted: tr.querySelector('.lasted').innerText })));
      for (const r of rows) {
        const a = firing.find((x) => x.labels.alertname === r.name);
        if (!a) continue;
        assert.doesNotMatch(r.lasted, /≥/, `${r.name}: ${r.lasted}`);
        const active = Date.parse(a.activeAt) / 1000;
        assert.ok(seconds(r.lasted) <= now - active + 1, `${r.name} lasted ${r.lasted} but became active ${duration(now - active)} ago`);
      }
      await p.close();
    });

    // --- Unknown GPU and unknown route: a clear not-found page with links, no empty charts.
    await t.test('not found: unknown GPU, route and job', async () => {
      const p = await open(ctx, agent, '#/gpu/42', errors);
      await p.waitForSelector('[data-notfound="gpu"]');
      assert.equal(await p.locator('.chart').count(), 0);
      assert.ok(await p.locator('[data-notfound="gpu"] a[href="#/gpu/0"]').count() === 1);
      await p.goto(`${agent.url}/#/nonsense/page`);
      await p.waitForSelector('[data-notfound="nonsense/page"]');
      assert.ok(await p.locator('[data-notfound] a[href="#/fleet"]').count() === 1);
      assert.equal(await p.locator('.tile').count(), 0);
      await p.goto(`${agent.url}/#/job/no-such-job`);
      await p.waitForSelector('[data-notfound="job"]');
      await p.close();
    });

    // --- A phone: the findings, job, GPU and teams pages are no wider than the screen.
    await browser.close();
    browser = await launchBrowser(PHONE);
    for (const hash of ['#/findings', '#/job/notebook-7', '#/gpu/7', '#/teams', '#/reclaim', '#/jobs', '#/alerts']) {
      await t.test(`phone: ${hash} fits 420 px`, async () => {
        const p = await open(browser.context, agent, hash, errors);
        await sleep(500);
        await shoot(p, `xl-phone-${hash.replace(/[#/]+/g, '-').replace(/^-/, '')}`);
        await fitsWidth(p, PHONE.width, hash);
        await p.close();
      });
    }
    assert.deepEqual(errors.filter((e) => !/\/api\/gw\/v1\/jobs\/no-such-job/.test(e)), []);
  } finally {
    if (browser) await browser.close();
    jobs.forEach((j) => j.kill('SIGTERM'));
    await agent.stop();
    rmSync(work, { recursive: true, force: true });
  }
});
