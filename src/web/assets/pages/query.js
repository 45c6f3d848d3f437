// One PromQL expression as a chart over a time span: where a finding's evidence links to, so the
// query behind a figure can be seen (GET /api/v1/query_range on the agent's own store).
// #/query?expr=<PromQL>&from=<unix s>&to=<unix s>&title=<text>
import { getJson } from '../api.js';
import { TimeChart } from '../chart.js';
import { clock, html, render } from '../format.js';
import { rangeFromQuery } from '../timerange.js';

const COLORS = ['#4493f8', '#f0883e', '#3fb950', '#bc8cff', '#e3b341', '#39c5cf', '#ff7b72', '#8b949e'];
const POINTS = 240;
let st = null;

const fmt = (v) => (Math.abs(v) >= 1000 || Number.isInteger(v) ? v.toLocaleString('en-US', { maximumFractionDigits: 0 }) : v.toLocaleString('en-US', { maximumSignificantDigits: 4 }));
const labelText = (m) => Object.entries(m).filter(([k]) => k !== '__name__').map(([k, v]) => `${k}="${v}"`).join(', ') || m.__name__ || 'value';

export default {
  title: () => 'Query',
  mount(root, ctx) {
    root.innerHTML = '<div class="pagehead"></div><div class="qchart"></div><div class="qnote"></div>';
    st = { expr: ctx.route.query.get('expr') || '', els: { head: root.querySelector('.pagehead'), chart: root.querySelector('.qchart'), note: root.querySelector('.qnote') }, done: false };
    st.chart = new TimeChart(st.els.chart, { title: ctx.route.query.get('title') || 'Query', format: fmt });
  },
  async update(ctx) {
    if (!st) return;  // unmounted while a refresh was under way
    if (st.done) return;
    st.done = true;
    const { start, end } = rangeFromQuery(ctx.route.query, ctx.now);
    render(st.els.head, html`<div><h1>${ctx.route.query.get('title') || 'Query'}</h1>
      <div class="sub"><code class="promql">${st.expr || '(no expression)'}</code></div><div class="sub">${clock(start, true)} – ${clock(end, true)}</div></div>`);
    if (!st.expr) { render(st.els.note, html`<div class="card empty"><b>No expression</b>This page draws the PromQL given as <code>expr</code>.</div>`); return; }
    const step = Math.max(1, (end - start) / POINTS);
    const r = await getJson(`/api/v1/query_range?query=${encodeURIComponent(st.expr)}&start=${start}&end=${end}&step=${step}`);
    if (!st) return;
    if (r.error || r.missing) { render(st.els.note, html`<div class="card empty"><b>The query could not run</b>${r.error || 'this agent has no /api/v1/query_range'}</div>`); return; }
    const series = (r.data?.result || []).slice(0, 8);
    const points = Math.round((end - start) / step);
    const lines = series.map((s, i) => {
      const avg = new Array(points).fill(null);
      for (const [t, v] of s.values) {
        const b = Math.min(points - 1, Math.max(0, Math.floor((t - start) / step)));
        avg[b] = Number(v);
      }
      return { label: labelText(s.metric), color: COLORS[i % COLORS.length], avg, min: avg, max: avg };
    });
    st.chart.set({ start, end, step, points, lines });
    render(st.els.note, html`<p class="muted">${series.length} series${(r.data?.result || []).length > 8 ? ' (the first 8 drawn)' : ''} · step ${Math.round(step)} s · <a href="/api/v1/query_range?query=${encodeURIComponent(st.expr)}&start=${start}&end=${end}&step=${step}">raw JSON</a></p>`);
  },
  redraw() { st?.chart.draw(); },
  unmount() { st?.chart.destroy(); st = null; },
};
