// First paint of the web console on the demo fleet, in Debian's chromium (playwright-core):
//   node bench/console_paint.mjs [build/bin/gpuwarden] [runs]
// Starts `gpuwarden serve --simulate demo` (real time), lets it collect for a few seconds, then
// opens every page `runs` times, each in a fresh browser context (empty cache), and reports the
// median of the browser's first-contentful-paint and of the console's own `gw-data-painted` mark
// (the first page drawn with data from the agent), from Navigation Timing's origin.
import { Agent, launchBrowser, sleep } from '../tests/web/support.mjs';

const binary = process.argv[2] || 'build/bin/gpuwarden';
const runs = Number(process.argv[3] || 5);
const pages = ['#/fleet', '#/gpu/0', '#/jobs', '#/teams', '#/alerts', '#/findings'];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const agent = await Agent.start(binary, ['--simulate', 'demo']);
const browser = await launchBrowser();
try {
  await sleep(5000);
  console.log(`| page | first contentful paint (median of ${runs}) | data painted (median) |`);
  console.log('|---|---|---|');
  for (const hash of pages) {
    const fcp = [];
    const data = [];
    for (let i = 0; i < runs; i++) {
      const page = await browser.context.newPage();
      await page.route('**/*', (route) => route.continue());  // no cache between runs
      await page.goto(`${agent.url}/${hash}`);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
      const t = await page.evaluate(() => ({
        fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime,
        data: performance.getEntriesByName('gw-data-painted')[0]?.startTime,
      }));
      fcp.push(t.fcp);
      data.push(t.data);
      await page.close();
    }
    console.log(`| ${hash} | ${median(fcp).toFixed(0)} ms | ${median(data).toFixed(0)} ms |`);
  }
} finally {
  await browser.close();
  await agent.stop();
}
