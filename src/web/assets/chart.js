// Hand-written canvas charts: a time-series chart drawing each series as its per-bucket min-max
// band with the mean as a line (the shape of /api/gw/v1/chart), shaded intervals on the time
// axis (alert episodes, throttling), threshold lines, a crosshair that several charts can share,
// and drag-to-zoom.
//
// The shaded intervals and the time axis's labels are DOM elements under and beside the canvas
// (.band and .xaxis span): they carry their names (hover, tests) and their boxes can be measured.
// Time labels are spaced by their measured width, so they never overlap at any chart width.
//
// Drag-to-zoom: a drag across the plot dispatches a cancelable `zoom` event on chart.el
// (detail: {from, to}, Unix seconds); unless a listener cancels it, the chart sets that absolute
// range in the URL (timerange.js setRange), which the page's range toolbar follows.
import { clockSeconds, esc } from './format.js';
import { setRange } from './timerange.js';

// Tick spacings (seconds) the time axis may use, the finest that leaves room for its labels.
const TICK_STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
const LABEL_GAP_PX = 14;
const AXIS_FONT = '11px system-ui, sans-serif';
// Evaluations of the same alert at most this many evaluation intervals apart are one episode.
const EPISODE_GAP_EVALUATIONS = 2;
export const DEFAULT_RULE_INTERVAL_S = 15;

function cssVar(el, name) { return getComputedStyle(el).getPropertyValue(name).trim(); }

function niceStep(range, target) {
  const raw = range / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 2.5 ? 2.5 : n <= 5 ? 5 : 10) * mag;
}

// Resizes a canvas to its box at the device's pixel ratio; returns the 2D context and CSS size.
function fit(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  return { ctx, w, h };
}

// Runs of buckets where `values[i] > 0`, as [from, to] bucket index pairs (inclusive). Buckets
// without a sample (null) between two runs are bridged when they last at most `gapS` seconds:
// an alert is evaluated every rule interval, so at a fine bucket step most buckets of one
// episode hold no sample; a bucket with a 0 always ends a run. `gapS` 0: no bridging.
export function episodes(values, step, gapS = EPISODE_GAP_EVALUATIONS * DEFAULT_RULE_INTERVAL_S) {
  const out = [];
  let from = -1;
  let last = -1;
  values.forEach((v, i) => {
    if (v === null || v === undefined) return;
    if (v > 0) {
      if (from >= 0 && (i - last - 1) * step > gapS) { out.push([from, last]); from = -1; }
      if (from < 0) from = i;
      last = i;
    } else if (from >= 0) {
      out.push([from, last]);
      from = -1;
    }
  });
  if (from >= 0) out.push([from, last]);
  return out;
}

// The widest gap of one episode for alerts evaluated every `intervalS` seconds.
export function episodeGap(intervalS = DEFAULT_RULE_INTERVAL_S) { return EPISODE_GAP_EVALUATIONS * intervalS; }

// A band's colour at full strength, for its legend swatch ("rgba(248,81,73,0.22)" -> alpha 0.9).
const solid = (color) => color.replace(/^rgba\((.*),\s*[\d.]+\)$/, 'rgba($1, 0.9)');

const pad = (n) => String(n).padStart(2, '0');
// A tick's label: the date at midnight and for day ticks, seconds for sub-minute ticks.
function tickLabel(t, tick) {
  const d = new Date(t * 1000);
  if (tick >= 86400 || (d.getHours() === 0 && d.getMinutes() === 0 && d.getSeconds() === 0)) return `${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  if (tick < 60) return clockSeconds(t);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// Tick times of [start, end] every `tick` seconds, aligned to local time.
function tickTimes(start, end, tick) {
  const off = -new Date(start * 1000).getTimezoneOffset() * 60;
  const out = [];
  for (let t = Math.ceil((start + off) / tick) * tick - off; t <= end; t += tick) out.push(t);
  return out;
}

export class TimeChart {
  // opts: {title, format: (v) => text, axis: (v) => text, yMin, yMax, minSpan (least y range),
  //        integer, height}
  constructor(parent, opts) {
    this.opts = opts;
    this.el = document.createElement('section');
    this.el.className = 'chart card';
    this.el.innerHTML = `<header><h3>${esc(opts.title)}</h3><div class="legend"></div></header>
      <div class="plot"><div class="bands"></div><canvas></canvas><div class="xaxis"></div><div class="sel" hidden></div><div class="tip" hidden></div><div class="nodata" hidden>no data in this range</div></div>`;
    parent.appendChild(this.el);
    this.canvas = this.el.querySelector('canvas');
    this.tip = this.el.querySelector('.tip');
    this.sel = this.el.querySelector('.sel');
    this.bandLayer = this.el.querySelector('.bands');
    this.axis = this.el.querySelector('.xaxis');
    this.canvas.style.height = `${opts.height || 170}px`;
    this.data = null;
    this.cursor = null;
    this.onHover = null;
    this.drag = null;
    this.axisKey = '';
    this.canvas.addEventListener('pointermove', (e) => {
      if (this.drag) this.dragTo(e.offsetX);
      const i = this.bucketAt(e.offsetX);
      if (this.onHover) this.onHover(i); else this.hover(i);
    });
    this.canvas.addEventListener('pointerleave', () => (this.onHover ? this.onHover(null) : this.hover(null)));
    this.canvas.addEventListener('pointerdown', (e) => {
      if (e.button !== 0 || !this.data || this.bucketAt(e.offsetX) === null) return;
      this.drag = { x0: e.offsetX, x1: e.offsetX };
      this.canvas.setPointerCapture(e.pointerId);
    });
    this.canvas.addEventListener('pointerup', (e) => {
      if (!this.drag) return;
      this.dragTo(e.offsetX);
      const { x0, x1 } = this.drag;
      this.drag = null;
      this.sel.hidden = true;
      if (Math.abs(x1 - x0) >= 4) this.zoom(this.timeAt(Math.min(x0, x1)), this.timeAt(Math.max(x0, x1)));
    });
    this.canvas.addEventListener('pointercancel', () => { this.drag = null; this.sel.hidden = true; });
    this.resize = new ResizeObserver(() => this.draw());
    this.resize.observe(this.canvas);
  }

  destroy() { this.resize.disconnect(); this.el.remove(); }

  // data: {start, end, points, lines: [{label, color, avg, min, max}], hlines: [{value, label, color}],
  //        bands: [{start, end, color, label}]} (band start/end: Unix seconds; {from, to} bucket
  //        indexes, inclusive, are read too). One band is one shaded interval: an alert's episode,
  //        a throttle's run (episodes() turns a chart series into those).
  set(data) {
    this.data = data;
    const legend = this.el.querySelector('.legend');
    const keys = new Map();
    for (const b of this.bands()) if (b.label && !keys.has(b.label)) keys.set(b.label, b.color);
    legend.innerHTML = data.lines.map((l) => `<span><i style="background:${l.color}"></i>${esc(l.label)}</span>`).join('') +
      (data.hlines || []).map((l) => `<span class="dash"><i style="border-color:${l.color}"></i>${esc(l.label)}</span>`).join('') +
      [...keys].map(([label, color]) => `<span class="bandkey"><i style="background:${solid(color)}"></i>${esc(label)}</span>`).join('');
    const any = data.lines.some((l) => l.avg.some((v) => v !== null));
    this.el.querySelector('.nodata').hidden = any;
    this.el.dataset.empty = any ? 'false' : 'true';
    this.el.dataset.start = String(data.start);
    this.el.dataset.end = String(data.end);
    this.axisKey = '';
    this.draw();
  }

  // The bands in seconds.
  bands() {
    const d = this.data;
    return (d.bands || []).map((b) => (b.start !== undefined ? b : { ...b, start: d.start + b.from * d.step, end: d.start + (b.to + 1) * d.step }));
  }

  layout(w, h) { return { left: 64, right: 12, top: 10, bottom: 22, pw: w - 76, ph: h - 32 }; }

  bucketAt(x) {
    if (!this.data) return null;
    const { left, pw } = this.layout(this.canvas.clientWidth, this.canvas.clientHeight);
    const i = Math.floor(((x - left) / pw) * this.data.points);
    return i >= 0 && i < this.data.points ? i : null;
  }

  timeAt(x) {
    const d = this.data;
    const { left, pw } = this.layout(this.canvas.clientWidth, this.canvas.clientHeight);
    const f = Math.max(0, Math.min(1, (x - left) / pw));
    return d.start + f * (d.end - d.start);
  }

  dragTo(x) {
    const { left, pw } = this.layout(this.canvas.clientWidth, this.canvas.clientHeight);
    this.drag.x1 = Math.max(left, Math.min(left + pw, x));
    const a = Math.min(this.drag.x0, this.drag.x1);
    this.sel.hidden = false;
    this.sel.style.left = `${a}px`;
    this.sel.style.width = `${Math.abs(this.drag.x1 - this.drag.x0)}px`;
  }

  zoom(from, to) {
    const ev = new CustomEvent('zoom', { detail: { from, to }, cancelable: true, bubbles: true });
    if (this.el.dispatchEvent(ev)) setRange({ from, to });
  }

  hover(i) {
    this.cursor = i;
    this.draw();
    const d = this.data;
    if (i === null || !d) { this.tip.hidden = true; return; }
    const fmt = this.opts.format;
    const rows = d.lines.filter((l) => l.avg[i] !== null).map((l) => {
      const spread = l.min[i] !== l.max[i] ? ` <small>${esc(fmt(l.min[i]))} – ${esc(fmt(l.max[i]))}</small>` : '';
      return `<div><i style="background:${l.color}"></i>${esc(l.label)} <b>${esc(fmt(l.avg[i]))}</b>${spread}</div>`;
    });
    const t = d.start + (i + 0.5) * d.step;
    const active = new Map(this.bands().filter((b) => b.label && b.start <= t && t < b.end).map((b) => [b.label, b.color]));
    const bandRows = [...active].map(([label, color]) => `<div class="bandrow"><i style="background:${solid(color)}"></i>${esc(label)}</div>`);
    this.tip.innerHTML = `<div class="t">${clockSeconds(t)}</div>${rows.join('') || '<div>no sample</div>'}${bandRows.join('')}`;
    this.tip.hidden = false;
    const { left, pw } = this.layout(this.canvas.clientWidth, this.canvas.clientHeight);
    const x = left + ((i + 0.5) / d.points) * pw;
    const right = x > left + pw / 2;
    this.tip.style.left = right ? '' : `${x + 12}px`;
    this.tip.style.right = right ? `${this.canvas.clientWidth - x + 12}px` : '';
  }

  // The shaded intervals: one absolutely placed element per band, under the canvas.
  drawBands(w, h) {
    const d = this.data;
    const { left, top, pw, ph } = this.layout(w, h);
    const span = d.end - d.start;
    const parts = [];
    for (const b of this.bands()) {
      const a = Math.max(d.start, b.start);
      const z = Math.min(d.end, b.end);
      if (z <= a) continue;
      const x0 = left + ((a - d.start) / span) * pw;
      const x1 = left + ((z - d.start) / span) * pw;
      parts.push(`<div class="band" data-label="${esc(b.label || '')}" title="${esc(b.label || '')}" style="left:${x0.toFixed(1)}px;width:${Math.max(1, x1 - x0).toFixed(1)}px;top:${top}px;height:${ph}px;background:${b.color}"></div>`);
    }
    const html = parts.join('');
    if (this.bandLayer.innerHTML !== html) this.bandLayer.innerHTML = html;
  }

  // Time labels as DOM spans, at the finest tick spacing whose labels fit with LABEL_GAP_PX
  // between them; a label that would leave the chart's box is left out.
  drawAxis(ctx, w, h) {
    const d = this.data;
    const { left, top, pw, ph } = this.layout(w, h);
    const span = d.end - d.start;
    const key = `${d.start}|${d.end}|${w}|${h}`;
    ctx.font = AXIS_FONT;
    let tick = TICK_STEPS_S[TICK_STEPS_S.length - 1];
    let labels = [];
    for (const s of TICK_STEPS_S) {
      const times = tickTimes(d.start, d.end, s);
      if (times.length > pw / 20) continue;
      const texts = times.map((t) => tickLabel(t, s));
      const widest = Math.max(0, ...texts.map((x) => ctx.measureText(x).width));
      if ((s / span) * pw >= widest + LABEL_GAP_PX) { tick = s; labels = times.map((t, k) => ({ t, text: texts[k], width: ctx.measureText(texts[k]).width })); break; }
    }
    if (!labels.length) labels = tickTimes(d.start, d.end, tick).map((t) => ({ t, text: tickLabel(t, tick), width: ctx.measureText(tickLabel(t, tick)).width }));
    const placed = labels.map((l) => ({ ...l, x: left + ((l.t - d.start) / span) * pw }))
      .filter((l) => l.x - l.width / 2 >= 0 && l.x + l.width / 2 <= w);
    if (key !== this.axisKey) {
      this.axisKey = key;
      this.axis.style.top = `${top + ph + 4}px`;
      this.axis.innerHTML = placed.map((l) => `<span data-t="${l.t}" style="left:${l.x.toFixed(1)}px">${esc(l.text)}</span>`).join('');
    }
    return placed;
  }

  draw() {
    const d = this.data;
    if (!d || !this.canvas.isConnected) return;
    const { ctx, w, h } = fit(this.canvas);
    const { left, top, pw, ph } = this.layout(w, h);
    const grid = cssVar(this.el, '--grid');
    const text = cssVar(this.el, '--muted');
    const n = d.points;
    const x = (i) => left + (i / n) * pw;

    // y range over every band and threshold, with the configured floor/ceiling.
    let lo = this.opts.yMin ?? Infinity;
    let hi = this.opts.yMax ?? -Infinity;
    for (const l of d.lines) {
      for (let i = 0; i < n; i++) {
        if (l.min[i] !== null) { lo = Math.min(lo, l.min[i]); hi = Math.max(hi, l.max[i]); }
      }
    }
    for (const t of d.hlines || []) { lo = Math.min(lo, t.value); hi = Math.max(hi, t.value); }
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) { lo = 0; hi = 1; }
    if (hi === lo) hi = lo + (Math.abs(lo) || 1);
    if (this.opts.minSpan && hi - lo < this.opts.minSpan) hi = lo + this.opts.minSpan;
    const step = this.opts.integer ? Math.max(1, Math.ceil(niceStep(hi - lo, 4))) : niceStep(hi - lo, 4);
    lo = Math.floor(lo / step) * step;
    hi = Math.ceil(hi / step) * step;
    if (this.opts.yMax !== undefined && hi > this.opts.yMax && (d.hlines || []).every((t) => t.value <= this.opts.yMax)) hi = this.opts.yMax;
    const y = (v) => top + ph - ((v - lo) / (hi - lo)) * ph;

    // Shaded intervals first (under the canvas), so the data draws over them.
    this.drawBands(w, h);
    ctx.font = AXIS_FONT;
    ctx.textBaseline = 'middle';
    // Grid and y labels.
    ctx.strokeStyle = grid;
    ctx.fillStyle = text;
    ctx.lineWidth = 1;
    ctx.textAlign = 'right';
    for (let v = lo; v <= hi + step / 2; v += step) {
      const yy = Math.round(y(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(left, yy); ctx.lineTo(left + pw, yy); ctx.stroke();
      ctx.fillText((this.opts.axis || this.opts.format)(v), left - 6, yy);
    }
    // Time grid (the labels are DOM spans).
    for (const l of this.drawAxis(ctx, w, h)) {
      ctx.beginPath(); ctx.moveTo(Math.round(l.x) + 0.5, top); ctx.lineTo(Math.round(l.x) + 0.5, top + ph); ctx.stroke();
    }
    // Threshold lines.
    ctx.setLineDash([5, 4]);
    for (const t of d.hlines || []) {
      ctx.strokeStyle = t.color;
      const yy = Math.round(y(t.value)) + 0.5;
      ctx.beginPath(); ctx.moveTo(left, yy); ctx.lineTo(left + pw, yy); ctx.stroke();
    }
    ctx.setLineDash([]);
    // Each series: min-max band, then the mean.
    for (const l of d.lines) {
      ctx.fillStyle = l.color;
      ctx.globalAlpha = 0.2;
      for (let i = 0; i < n; i++) {
        if (l.min[i] === null) continue;
        const y0 = y(l.max[i]);
        ctx.fillRect(x(i), y0, Math.max(1, x(i + 1) - x(i)), Math.max(1, y(l.min[i]) - y0));
      }
      ctx.globalAlpha = 1;
      ctx.strokeStyle = l.color;
      ctx.lineWidth = 1.6;
      ctx.beginPath();
      let drawing = false;
      for (let i = 0; i < n; i++) {
        if (l.avg[i] === null) { drawing = false; continue; }
        const xx = (x(i) + x(i + 1)) / 2;
        if (drawing) ctx.lineTo(xx, y(l.avg[i])); else ctx.moveTo(xx, y(l.avg[i]));
        drawing = true;
      }
      ctx.stroke();
    }
    if (this.cursor !== null) {
      const xx = Math.round((x(this.cursor) + x(this.cursor + 1)) / 2) + 0.5;
      ctx.strokeStyle = text;
      ctx.beginPath(); ctx.moveTo(xx, top); ctx.lineTo(xx, top + ph); ctx.stroke();
    }
  }
}

// A small line of the last values (0..max), for tiles.
export function sparkline(canvas, values, color, max = 1) {
  if (!canvas.isConnected) return;
  const { ctx, w, h } = fit(canvas);
  const pts = [];
  values.forEach((v, i) => {
    if (v !== null) pts.push([(i / Math.max(1, values.length - 1)) * w, h - 1 - (Math.min(v, max) / max) * (h - 2)]);
  });
  if (!pts.length) return;
  ctx.beginPath();
  pts.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
  ctx.strokeStyle = color;
  ctx.lineWidth = 1.5;
  ctx.stroke();
  ctx.lineTo(pts[pts.length - 1][0], h);
  ctx.lineTo(pts[0][0], h);
  ctx.closePath();
  ctx.fillStyle = color;
  ctx.globalAlpha = 0.15;
  ctx.fill();
  ctx.globalAlpha = 1;
}
