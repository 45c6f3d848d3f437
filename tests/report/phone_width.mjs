// Opens a report file in Debian's chromium at a phone's width and prints, as JSON, how wide the
// page is (scrollWidth: more than the viewport means the page scrolls sideways) and which chart
// text runs past its SVG picture. Used by report_test (Report.FitsAPhoneScreen...).
//   node phone_width.mjs REPORT.html WIDTH
import { launchBrowser } from '../web/support.mjs';

const [file, width] = process.argv.slice(2);
const browser = await launchBrowser({ width: Number(width), height: 900 });
try {
  const page = await browser.context.newPage();
  await page.goto(`file://${file}`);
  const result = await page.evaluate(() => {
    const labelsOutside = [];
    const svgs = [...document.querySelectorAll('svg')];
    for (const svg of svgs) {
      const box = svg.viewBox.baseVal;
      for (const t of svg.querySelectorAll('text')) {
        const b = t.getBBox();
        if (b.x < box.x - 0.5 || b.x + b.width > box.x + box.width + 0.5) labelsOutside.push(t.textContent);
      }
    }
    return { scrollWidth: document.documentElement.scrollWidth, labelsOutside, charts: svgs.length };
  });
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
}
