// Regenerates docs/screenshots/<page>-<desktop|phone>.png from the demo fleet (the simulated
// demo of scripts/demo-sim.sh on a stepped clock, 40 simulated minutes in: tests/web/demo_fleet.mjs).
// Run through scripts/screenshots.sh, which names the binary and the output folder.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDemoFleet } from '../tests/web/demo_fleet.mjs';
import { launchBrowser, sleep } from '../tests/web/support.mjs';
import { decodePng, paletteEncode } from './png_palette.mjs';

const [binary, outDir] = process.argv.slice(2);
if (!binary || !outDir) {
  console.error('usage: node scripts/screenshots.mjs GPUWARDEN_BINARY OUTPUT_DIR');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const SIZES = { desktop: { width: 1600, height: 1000 }, phone: { width: 420, height: 900 } };

const fleet = await startDemoFleet(binary, { minutes: 40, log: (m) => console.log(`screenshots: ${m}`) });
let browser;
try {
  const { agent } = fleet;
  const running = (await agent.json('/api/gw/v1/jobs?running=1')).data.jobs;
  const job = running.find((j) => j.job_id === 'llm-pretrain') || running[0];
  // [file name, route, on a phone: the part to scroll to (the GPU page's charts)]
  const pages = [['fleet', 'fleet'], ['gpu', 'gpu/0', '.range'], ['jobs', 'jobs'], ['job', `job/${job.job_id}`], ['teams', 'teams'],
    ['team', `team/${job.team}`], ['alerts', 'alerts'], ['findings', 'findings'], ['reclaim', 'reclaim']];
  browser = await launchBrowser(SIZES.desktop);
  for (const [size, viewport] of Object.entries(SIZES)) {
    const page = await browser.context.newPage();
    await page.setViewportSize(viewport);
    for (const [name, route, phoneAt] of pages) {
      await page.goto(`${agent.url}/#/${route}`);
      await page.reload();  // a fresh page per route, as a link opens it
      await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
      await sleep(1500);  // charts and the tables' second refresh
      if (size === 'phone' && phoneAt) {
        await page.evaluate((sel) => window.scrollTo(0, document.querySelector(sel).getBoundingClientRect().top + scrollY - 56), phoneAt);
        await sleep(300);
      }
      const path = join(outDir, `${name}-${size}.png`);
      // The window at device scale 1, with a palette: small files.
      writeFileSync(path, paletteEncode(decodePng(await page.screenshot())));
      console.log(`screenshots: ${path}`);
    }
    await page.close();
  }
} finally {
  if (browser) await browser.close();
  await fleet.stop();
}
