// Layout and time-range tests of the web console on the demo fleet (tests/web/demo_fleet.mjs) in
// Debian's chromium, at a desktop (1600x1000) and a phone (420x900) viewport:
//  - no page is wider than the window (every route, both sizes);
//  - on a phone the tab menu reaches every page;
//  - the charts' time labels never overlap, at every live range and both sizes;
//  - an alert is shaded as one band per episode (checked against the raw ALERTS samples);
//  - drag-to-zoom sets from/to in the URL and the charts' range; an absolute range in the URL is
//    honored after a reload; "Back to live" returns to a live window.
// Run by ctest (label "browser"):
//   node tests/web/console_layout_test.mjs BUILD/bin/gpuwarden OUTPUT_DIR
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { startDemoFleet } from './demo_fleet.mjs';
import { launchBrowser, sleep } from './support.mjs';

const [binary, outDir] = process.argv.slice(2);
if (!binary || !outDir) {
  console.error('usage: node console_layout_test.mjs GPUWARDEN_BINARY OUTPUT_DIR');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });

const DESKTOP = { width: 1600, height: 1000 };
const PHONE = { width: 420, height: 900 };
const RANGES = ['15m', '1h', '6h', '24h', '7d'];

async function open(context, agent, hash, viewport) {
  const page = await context.newPage();
  await page.setViewportSize(viewport);
  const errors = [];
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  await page.goto(`${agent.url}/${hash}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
  return { page, errors };
}

// Waits until every visible chart shows data for the range [start, end] the page asked for.
async function chartsReady(page) {
  await page.waitForSelector('.chart[data-empty="false"]', { timeout: 20000 });
  await sleep(300);
}

const chartRanges = (page) => page.locator('.chart:not([hidden])').evaluateAll((els) => els.map((e) => [Number(e.dataset.start), Number(e.dataset.end)]));
const hashQuery = (page) => page.evaluate(() => Object.fromEntries(new URLSearchParams(location.hash.split('?')[1] || '')));

// Raw ALERTS samples of GPU `gpu` (firing) in [start, end], one list of times per alert name,
// cut into episodes wherever two evaluations lie more than 1.5 evaluation intervals apart.
async function alertEpisodes(agent, gpu, start, end, intervalS) {
  const sel = encodeURIComponent(`ALERTS{gpu="${gpu}",alertstate="firing"}[${Math.ceil(end - start)}s]`);
  const body = await agent.json(`/api/v1/query?query=${sel}&time=${end}`);
  assert.equal(body.data.resultType, 'matrix', JSON.stringify(body).slice(0, 300));
  const out = {};
  for (const s of body.data.result) {
    const times = s.values.map(([t]) => Number(t)).filter((t) => t >= start && t < end);
    const eps = [];
    for (const t of times) {
      const last = eps[eps.length - 1];
      if (last && t - last.to <= 1.5 * intervalS) last.to = t; else eps.push({ from: t, to: t });
    }
    if (eps.length) out[s.metric.alertname] = eps;
  }
  return out;
}

test('console layout, phone menu, time axis, alert episodes and time ranges', async () => {
  const fleet = await startDemoFleet(binary, { minutes: 40, log: (m) => console.log(`# ${m}`) });
  const { agent } = fleet;
  let browser;
  try {
    browser = await launchBrowser(DESKTOP);
    const { context } = browser;
    const running = (await agent.json('/api/gw/v1/jobs?running=1')).data.jobs;
    const job = running.find((j) => j.job_id === 'llm-pretrain') || running[0];
    const routes = ['fleet', 'gpu/0', 'gpu/3', 'jobs', `job/${job.job_id}`, 'teams', `team/${job.team}`, 'alerts', 'findings', 'reclaim'];

    await test('no page is wider than the window', async () => {
      const wide = [];
      for (const viewport of [DESKTOP, PHONE]) {
        for (const route of routes) {
          const { page, errors } = await open(context, agent, `#/${route}`, viewport);
          await sleep(700);  // charts, tables and their second refresh
          const m = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: innerWidth }));
          if (m.scroll > m.inner) {
            // Name the widest elements, for the report.
            const culprits = await page.evaluate(() => [...document.querySelectorAll('body *')]
              .filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && ![...e.children].some((c) => c.getBoundingClientRect().right > innerWidth + 1))
              .slice(0, 4).map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} "${e.textContent.trim().slice(0, 40)}" right=${Math.round(e.getBoundingClientRect().right)}`));
            wide.push(`#/${route} at ${viewport.width}px: scrollWidth ${m.scroll} > ${m.inner} (${culprits.join('; ')})`);
            await page.screenshot({ path: join(outDir, `wide-${route.replace('/', '-')}-${viewport.width}.png`) });
          }
          assert.deepEqual(errors, [], `#/${route}`);
          await page.close();
        }
      }
      assert.deepEqual(wide, []);
    });

    await test('on a phone the tab menu reaches every page', async () => {
      const { page } = await open(context, agent, '#/fleet', PHONE);
      const tabs = await page.locator('nav a[data-nav]').evaluateAll((as) => as.map((a) => a.dataset.nav));
      assert.ok(tabs.length >= 5, tabs.join());
      assert.ok(await page.locator('#menu').isVisible(), 'the menu button is shown on a phone');
      assert.match(await page.locator('#menu').innerText(), /Fleet/);
      for (const name of tabs) {
        const link = page.locator(`nav a[data-nav="${name}"]`);
        assert.equal(await link.isVisible(), false, `${name}: the menu starts closed`);
        await page.click('#menu');
        assert.equal(await page.locator('#menu').getAttribute('aria-expanded'), 'true');
        const box = await link.boundingBox();
        assert.ok(box && box.x >= 0 && box.x + box.width <= PHONE.width && box.height >= 24, `${name}: a tappable row inside the screen: ${JSON.stringify(box)}`);
        await link.click();
        await page.waitForFunction((n) => location.hash.startsWith(`#/${n}`), name);
        await page.waitForFunction((n) => document.getElementById('main').dataset.page === n, name, { timeout: 5000 }).catch(() => {});
        assert.equal(await page.locator('#main').getAttribute('data-page'), name, `the tab ${name} opens its page`);
        assert.equal(await link.isVisible(), false, `${name}: choosing a page closes the menu`);
        await page.waitForFunction((n) => document.querySelector('#menu .current').textContent === document.querySelector(`nav a[data-nav="${n}"]`).firstChild.textContent.trim(), name);
      }
      await page.setViewportSize(DESKTOP);
      assert.equal(await page.locator('#menu').isVisible(), false, 'no menu button on a desktop');
      for (const name of tabs) assert.ok(await page.locator(`nav a[data-nav="${name}"]`).isVisible(), `${name}: a tab on a desktop`);
      await page.close();
    });

    await test("the charts' time labels never overlap", async () => {
      for (const viewport of [DESKTOP, { width: 1000, height: 900 }, PHONE]) {
        for (const range of RANGES) {
          const { page } = await open(context, agent, `#/gpu/3?range=${range}`, viewport);
          await chartsReady(page);
          const charts = await page.locator('.chart:not([hidden]) .plot').evaluateAll((plots) => plots.map((p) => {
            const box = p.getBoundingClientRect();
            return { left: box.left, right: box.right, labels: [...p.querySelectorAll('.xaxis span')].map((s) => {
              const r = s.getBoundingClientRect();
              return { text: s.textContent, left: r.left, right: r.right };
            }) };
          }));
          assert.ok(charts.length >= 6);
          for (const c of charts) {
            const where = `${range} at ${viewport.width}px`;
            assert.ok(c.labels.length >= 2, `${where}: ${c.labels.length} time labels`);
            for (let i = 0; i < c.labels.length; i++) {
              const l = c.labels[i];
              assert.ok(l.left >= c.left - 0.5 && l.right <= c.right + 0.5, `${where}: "${l.text}" leaves its chart`);
              if (i) assert.ok(c.labels[i - 1].right + 2 <= l.left, `${where}: "${c.labels[i - 1].text}" and "${l.text}" overlap`);
            }
            // Neighbours never read the same (as 10 s ticks labelled to the minute would).
            c.labels.slice(1).forEach((l, i) => assert.notEqual(l.text, c.labels[i].text, `${where}: ${c.labels.map((x) => x.text)}`));
          }
          await page.close();
        }
      }
    });

    await test('an alert is one band per episode', async () => {
      const info = (await agent.json('/api/gw/v1/console')).data;
      const now = (await agent.json('/api/snapshot')).taken_at;
      const { page } = await open(context, agent, '#/gpu/3?range=1h', DESKTOP);
      await chartsReady(page);
      const [[start, end]] = await chartRanges(page);
      assert.ok(end >= now - 60, `a live range ends now: ${end} vs ${now}`);
      assert.equal(typeof info.rule_interval_s, 'number', JSON.stringify(info));
      const truth = await alertEpisodes(agent, 3, start, end, info.rule_interval_s);
      assert.ok(Object.keys(truth).length >= 1, `GPU 3's cooling failure raised no alert: ${JSON.stringify(truth)}`);
      const charts = await page.locator('.chart:not([hidden])').evaluateAll((els) => els.map((e) => {
        const plot = e.querySelector('.plot').getBoundingClientRect();
        return [...e.querySelectorAll('.band')].map((b) => {
          const r = b.getBoundingClientRect();
          return { label: b.dataset.label, left: r.left - plot.left, width: r.width };
        });
      }));
      const plotWidth = await page.locator('.chart:not([hidden]) canvas').first().evaluate((c) => c.clientWidth);
      const pw = plotWidth - 76;  // chart.js layout: 64 px of y labels on the left, 12 on the right
      for (const [name, eps] of Object.entries(truth)) {
        for (const bands of charts) {
          const mine = bands.filter((b) => b.label === `${name} (firing)`);
          assert.equal(mine.length, eps.length, `${name}: ${mine.length} bands for ${eps.length} episode(s) ${JSON.stringify(eps)}`);
          // Each band spans its episode, from the first evaluation to the last (within a few
          // pixels: the chart's buckets and one evaluation interval).
          mine.sort((a, b) => a.left - b.left).forEach((b, k) => {
            const want = ((eps[k].to - eps[k].from) / (end - start)) * pw;
            assert.ok(Math.abs(b.width - want) <= Math.max(6, pw * 0.02) + (info.rule_interval_s / (end - start)) * pw,
              `${name}: band ${k} is ${b.width.toFixed(1)} px wide, its episode ${want.toFixed(1)} px`);
          });
        }
      }
      // The legend names the alert.
      assert.match(await page.locator('.chart').first().locator('.legend').innerText(), new RegExp(Object.keys(truth)[0]));
      await page.close();
    });

    await test('the alerts page history is one run per episode too', async () => {
      const info = (await agent.json('/api/gw/v1/console')).data;
      const { page } = await open(context, agent, '#/alerts', DESKTOP);
      await page.waitForSelector('.timeline .lane', { timeout: 20000 });
      const now = (await agent.json('/api/snapshot')).taken_at;
      const truth = await alertEpisodes(agent, 3, now - 21600, now + 1, info.rule_interval_s);
      assert.ok(Object.keys(truth).length >= 1, JSON.stringify(truth));
      const lanes = await page.locator('.timeline .lane').evaluateAll((els) => els.map((e) => ({
        label: e.querySelector('span').childNodes[0].textContent.trim(),
        state: (e.querySelector('small') || {}).textContent,
        runs: e.querySelectorAll('.track span').length,
      })));
      for (const [name, eps] of Object.entries(truth)) {
        const lane = lanes.find((l) => l.label === `${name} · GPU 3` && l.state === 'firing');
        assert.ok(lane, `no firing lane for ${name} on GPU 3 among ${JSON.stringify(lanes)}`);
        assert.equal(lane.runs, eps.length, `${name}: ${lane.runs} runs for ${eps.length} episode(s)`);
      }
      await page.close();
    });

    await test('drag-to-zoom sets from/to in the URL and the charts follow; the range survives a reload', async () => {
      const { page } = await open(context, agent, '#/gpu/3?range=1h', DESKTOP);
      await chartsReady(page);
      const [[start, end]] = await chartRanges(page);
      await page.locator('.chart:not([hidden]) canvas').first().scrollIntoViewIfNeeded();
      const canvas = await page.locator('.chart:not([hidden]) canvas').first().boundingBox();
      const y = canvas.y + canvas.height / 2;
      await page.mouse.move(canvas.x + 64 + (canvas.width - 76) * 0.5, y);
      await page.mouse.down();
      await page.mouse.move(canvas.x + 64 + (canvas.width - 76) * 0.7, y, { steps: 4 });
      await page.mouse.move(canvas.x + 64 + (canvas.width - 76) * 0.9, y, { steps: 4 });
      await page.mouse.up();
      await page.waitForFunction(() => /[?&]from=\d+/.test(location.hash));
      const q = await hashQuery(page);
      const from = Number(q.from);
      const to = Number(q.to);
      const span = end - start;
      assert.equal(q.range, undefined, 'an absolute range replaces the live one');
      assert.ok(Math.abs(from - (start + 0.5 * span)) <= span * 0.01, `from ${from}, expected about ${start + 0.5 * span}`);
      assert.ok(Math.abs(to - (start + 0.9 * span)) <= span * 0.01, `to ${to}, expected about ${start + 0.9 * span}`);
      await page.waitForFunction(([a, b]) => [...document.querySelectorAll('.chart:not([hidden])')].every((c) => Number(c.dataset.start) === a && Number(c.dataset.end) === b), [from, to]);
      assert.ok(await page.locator('.rangebar .golive').isVisible());
      assert.equal(await page.locator('.rangebar [data-range].on').count(), 0);

      // A reload shows the same absolute range (it is all in the URL).
      await page.reload();
      await page.waitForSelector('body[data-ready="true"]');
      await chartsReady(page);
      await page.waitForFunction(([a, b]) => [...document.querySelectorAll('.chart:not([hidden])')].every((c) => Number(c.dataset.start) === a && Number(c.dataset.end) === b), [from, to], { timeout: 10000 });
      const shown = await page.locator('.rangebar .abs input[name="from"]').inputValue();
      assert.equal(new Date(shown).getTime() / 1000, Math.floor(from / 60) * 60, `the from input shows the range: ${shown}`);
      // The range stays put while time moves on.
      await agent.advance(120);
      await sleep(2500);
      assert.deepEqual((await chartRanges(page))[0], [from, to]);

      // Back to live: the smallest live range that holds the window, ending now.
      await page.click('.rangebar .golive');
      await page.waitForFunction(() => /[?&]range=/.test(location.hash) && !/from=/.test(location.hash));
      assert.equal((await hashQuery(page)).range, '1h');
      await page.waitForFunction((a) => Number(document.querySelector('.chart').dataset.start) !== a, from);
      const now = (await agent.json('/api/snapshot')).taken_at;
      const [[s2, e2]] = await chartRanges(page);
      assert.ok(e2 >= now - 120 && Math.abs(e2 - s2 - 3600) < 1, `live again: ${s2}..${e2}, now ${now}`);

      // An absolute range typed in the inputs.
      await page.fill('.rangebar .abs input[name="from"]', '2020-01-01T10:00');
      await page.fill('.rangebar .abs input[name="to"]', '2020-01-01T09:00');
      await page.click('.rangebar .abs button');
      assert.match(await page.locator('.rangebar .rerror').innerText(), /before/);
      // It stays through the page's refreshes (each repaints the bar: it was wiped within one),
      // and goes once the times are edited.
      await sleep(5000);
      assert.match(await page.locator('.rangebar .rerror').innerText(), /before/);
      await page.fill('.rangebar .abs input[name="to"]', '2020-01-01T11:30');
      assert.equal(await page.locator('.rangebar .rerror').isVisible(), false);
      await page.click('.rangebar .abs button');
      await page.waitForFunction(() => /from=/.test(location.hash));
      const typed = await hashQuery(page);
      assert.deepEqual([Number(typed.from), Number(typed.to)], [new Date('2020-01-01T10:00').getTime() / 1000, new Date('2020-01-01T11:30').getTime() / 1000]);
      await page.close();

      // A broken range in a link: the default window and a message saying why.
      const bad = await open(context, agent, '#/gpu/3?from=abc&to=1', DESKTOP);
      await chartsReady(bad.page);
      assert.match(await bad.page.locator('.rangebar .rerror').innerText(), /Unix times/);
      await bad.page.close();
    });
  } finally {
    if (browser) await browser.close();
    await fleet.stop();
  }
});
