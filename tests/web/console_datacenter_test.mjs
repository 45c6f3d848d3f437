// Browser tests of the console's datacenter views on the simulator's datacenter scenarios
// (docs/scenarios.md): the GPU page's profiling signals (GPM) and busy-but-hollow warning, its MIG
// instances (and a re-partition while the page is open), its NVLink links (a link going down, a
// CRC error storm). Each check compares the page with the agent's /api/snapshot at the same
// stepped-clock instant, so it follows whatever the scenario puts on each GPU. Run by ctest
// (label "browser"):
//   node tests/web/console_datacenter_test.mjs BUILD/bin/gpuwarden OUTPUT_DIR
// Screenshots of the GPU pages at 1600x1000 and 420x900 land in OUTPUT_DIR.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { pct } from '../../src/web/assets/format.js';
import { Agent, launchBrowser, sleep } from './support.mjs';

const [binary, outDir] = process.argv.slice(2);
if (!binary || !outDir) {
  console.error('usage: node console_datacenter_test.mjs GPUWARDEN_BINARY OUTPUT_DIR');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const scenarios = new URL('../../scenarios/', import.meta.url).pathname;

// Opens `hash` in a fresh page of `browser`, failing on console errors at the end (errors()).
async function open(browser, agent, hash) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push(`${msg.text()} (${msg.location().url || ''})`); });
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  await page.goto(`${agent.url}/${hash}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
  return { page, errors };
}

// Full-page screenshots at a desktop and a phone size.
async function shoot(page, name) {
  await page.setViewportSize({ width: 1600, height: 1000 });
  await sleep(400);
  await page.screenshot({ path: join(outDir, `${name}-1600.png`), fullPage: true });
  await page.setViewportSize({ width: 420, height: 900 });
  await sleep(400);
  await page.screenshot({ path: join(outDir, `${name}-420.png`), fullPage: true });
  await page.setViewportSize({ width: 1600, height: 1000 });
}

// The page after a refresh drawn from the agent's latest snapshot: body[data-painted-at] is set
// once the page's own requests have finished (the live clock changes before that).
async function refreshed(page, agent) {
  const at = String((await agent.json('/api/snapshot')).taken_at);
  await page.waitForFunction((t) => document.body.dataset.paintedAt === t, at, { timeout: 15000 });
}

async function startScenario(file) {
  const agent = await Agent.start(binary, ['--simulate', join(scenarios, file), '--sim-clock', 'stepped']);
  return agent;
}

test('NVLink: the down link and the error storm are on the GPU page as the agent reports them', async (t) => {
  if (!existsSync(join(scenarios, 'hgx-nvlink.yaml'))) { t.skip('no scenarios/hgx-nvlink.yaml'); return; }
  const agent = await startScenario('hgx-nvlink.yaml');
  let browser;
  try {
    for (let s = 0; s < 150; s += 30) await agent.advance(30);  // past the link down (60 s) and the storm (90 s)
    const snap = await agent.json('/api/snapshot');
    const down = snap.gpus.filter((g) => (g.nvlinks || []).some((l) => l.up === false));
    assert.ok(down.length >= 1, `no GPU with a link down at 150 s: ${JSON.stringify(snap.gpus.map((g) => g.nvlinks?.length))}`);
    const crcOf = (g) => (g.metrics['gpu_nvlink_errors_total{type="crc_flit"}'] || 0) + (g.metrics['gpu_nvlink_errors_total{type="crc_data"}'] || 0);
    const storm = snap.gpus.reduce((a, g) => (crcOf(g) > crcOf(a) ? g : a));
    assert.ok(crcOf(storm) > 0, 'no NVLink CRC errors anywhere at 150 s');

    browser = await launchBrowser({ width: 1600, height: 1000 });
    const g = down[0];
    const { page, errors } = await open(browser, agent, `#/gpu/${g.index}`);
    await page.waitForSelector('.nvlink .pill');
    const links = g.nvlinks;
    const up = links.filter((l) => l.up === true).length;
    assert.equal(await page.locator('.nvlink .pill').innerText(), `${up} / ${links.length} links up`.toUpperCase());
    const downLinks = links.filter((l) => l.up === false).map((l) => String(l.link));
    assert.deepEqual(await page.locator('.nvlink .link.down').evaluateAll((els) => els.map((e) => e.dataset.link)), downLinks);
    assert.match(await page.locator('.nvlink .downlinks').innerText(), new RegExp(`Down: ${downLinks.map((l) => `link ${l}`).join(', ')}`));
    assert.equal(await page.locator('.nvlink .link').count(), links.length);
    // A chip on its fleet tile too.
    await shoot(page, `nvlink-gpu-${g.index}`);
    assert.deepEqual(errors, []);
    await page.close();

    const storming = await open(browser, agent, `#/gpu/${storm.index}`);
    await storming.page.waitForSelector('.nvlink .facts');
    const facts = await storming.page.locator('.nvlink .facts').innerText();
    const flit = storm.metrics['gpu_nvlink_errors_total{type="crc_flit"}'];
    if (flit !== undefined) assert.match(facts, new RegExp(`CRC flit ${Number(flit).toLocaleString('en-US')}`), facts);
    await shoot(storming.page, `nvlink-storm-gpu-${storm.index}`);
    assert.deepEqual(storming.errors, []);
    await storming.page.close();

    const fleet = await open(browser, agent, '#/fleet');
    await fleet.page.waitForSelector(`.tile[data-gpu="${g.index}"] [data-chip="nvlink"]`);
    assert.match(await fleet.page.locator(`.tile[data-gpu="${g.index}"] [data-chip="nvlink"]`).innerText(), new RegExp(`NVLink ${up}/${links.length} up`));
    await fleet.page.screenshot({ path: join(outDir, 'nvlink-fleet-1600.png'), fullPage: true });
    assert.deepEqual(fleet.errors, []);
  } finally {
    if (browser) await browser.close();
    await agent.stop();
  }
});

test('MIG: the instances, their profiles, UUIDs and memory follow the agent, also across a re-partition', async (t) => {
  if (!existsSync(join(scenarios, 'mig.yaml'))) { t.skip('no scenarios/mig.yaml'); return; }
  const agent = await startScenario('mig.yaml');
  let browser;
  try {
    await agent.advance(30);
    const migGpus = () => agent.json('/api/snapshot').then((s) => s.gpus.filter((g) => (g.mig || []).length > 0));
    const before = await migGpus();
    assert.ok(before.length >= 2, `MIG GPUs at 30 s: ${before.length}`);
    browser = await launchBrowser({ width: 1600, height: 1000 });
    const check = async (page, g) => {
      const rows = await page.locator('.mig tbody tr[data-mig]').evaluateAll((trs) => trs.map((tr) => ({
        id: tr.dataset.mig, profile: tr.cells[1].querySelector('b').innerText, uuid: tr.cells[2].innerText.trim(), sm: tr.cells[5].innerText.trim() })));
      assert.deepEqual(rows.map((r) => [r.id, r.profile, r.uuid]), g.mig.map((i) => [String(i.gpu_instance_id), i.profile, i.uuid]));
      rows.forEach((r, k) => assert.equal(r.sm, pct(g.mig[k].metrics?.gpu_mig_sm_active_ratio), `instance ${r.id}`));
    };
    for (const g of before) {
      const { page, errors } = await open(browser, agent, `#/gpu/${g.index}`);
      await page.waitForSelector('.mig tbody tr[data-mig]');
      await check(page, g);
      assert.match(await page.locator('.mig .pill').innerText(), /MIG ON/);
      await shoot(page, `mig-gpu-${g.index}`);
      assert.deepEqual(errors, []);
      await page.close();
    }
    // Re-partitioned while the page is open: the table follows within a refresh.
    const g = before.find((x) => x.mig.length !== 7) || before[0];
    const { page, errors } = await open(browser, agent, `#/gpu/${g.index}`);
    await page.waitForSelector('.mig tbody tr[data-mig]');
    for (let s = 30; s < 180; s += 30) await agent.advance(30);
    await refreshed(page, agent);
    const after = (await migGpus()).find((x) => x.index === g.index);
    if (after) await check(page, after);
    else assert.equal(await page.locator('.mig tbody tr[data-mig]').count(), 0);
    await shoot(page, `mig-gpu-${g.index}-repartitioned`);
    assert.deepEqual(errors, []);
  } finally {
    if (browser) await browser.close();
    await agent.stop();
  }
});

test('profiling: SM active next to utilization, a warning on the busy-but-hollow GPU only', async (t) => {
  if (!existsSync(join(scenarios, 'busy-but-hollow.yaml'))) { t.skip('no scenarios/busy-but-hollow.yaml'); return; }
  const agent = await startScenario('busy-but-hollow.yaml');
  let browser;
  try {
    for (let s = 0; s < 300; s += 60) await agent.advance(60);
    const snap = await agent.json('/api/snapshot');
    browser = await launchBrowser({ width: 1600, height: 1000 });
    let hollowSeen = false;
    for (const g of snap.gpus) {
      const { page, errors } = await open(browser, agent, `#/gpu/${g.index}`);
      await page.waitForSelector('section.gpm[data-gpm]');
      const util = g.metrics.gpu_utilization_ratio;
      const sm = g.metrics.gpu_sm_active_ratio;
      if (sm === undefined) {
        // No GPM: no SM figure anywhere, never a 0.
        assert.equal(await page.locator('section.gpm').getAttribute('data-gpm'), 'none');
        assert.doesNotMatch(await page.locator('.kpis').innerText(), /SM active/);
      } else {
        assert.match(await page.locator('.kpis').innerText(), new RegExp(`SM active ${pct(sm)}`));
        const hollow = util >= 0.8 && sm < 0.25;
        hollowSeen ||= hollow;
        assert.equal(await page.locator('section.gpm .hollow').count(), hollow ? 1 : 0, `GPU ${g.index}: util ${util}, SM active ${sm}`);
        // The chart next to utilization has SM active once there is history.
        await page.waitForSelector('.chart[data-empty="false"]');
        assert.match(await page.locator('.chart').first().locator('.legend').innerText(), /SM active/);
      }
      await shoot(page, `profiling-gpu-${g.index}`);
      assert.deepEqual(errors, []);
      await page.close();
    }
    assert.ok(hollowSeen, `no GPU busy but hollow: ${JSON.stringify(snap.gpus.map((g) => [g.metrics.gpu_utilization_ratio, g.metrics.gpu_sm_active_ratio]))}`);
  } finally {
    if (browser) await browser.close();
    await agent.stop();
  }
});
