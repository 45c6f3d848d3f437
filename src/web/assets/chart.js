// Hand-written canvas charts: a time-series chart drawing each series as its per-bucket min-max
// band with the mean as a line (the shape of /api/gw/v1/chart), shaded intervals on the time
// axis (throttling, alerts), threshold lines, and a crosshair that several charts can share.
import { clock, clockSeconds, esc } from './format.js';

const TICK_STEPS_S = [10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

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

export class TimeChart {
  // opts: {title, format: (v) => text, yMin, yMax, minSpan (least y range), height}
  constructor(parent, opts) {
    this.opts = opts;
    this.el = document.createElement('section');
    this.el.className = 'chart card';
    this.el.innerHTML = `<header><h3>${esc(opts.title)}</h3><div class="legend"></div></header>
      <div class="plot"><canvas></canvas><div class="tip" hidden></div><div class="nodata" hidden>no data in this range</div></div>`;
    parent.appendChild(this.el);
    this.canvas = this.el.querySelector('canvas');
    this.tip = this.el.querySelector('.tip');
    this.canvas.style.height = `${opts.height || 170}px`;
    this.data = null;
    this.cursor = null;
    this.onHover = null;
    this.canvas.addEventListener('mousemove', (e) => {
      const i = this.bucketAt(e.offsetX);
      if (this.onHover) this.onHover(i); else this.hover(i);
    });
    this.canvas.addEventListener('mouseleave', () => (this.onHover ? this.onHover(null) : this.hover(null)));
    this.resize = new ResizeObserver(() => this.draw());
    this.resize.observe(this.canvas);
  }

  destroy() { this.resize.disconnect(); this.el.remove(); }

  // data: {start, end, points, lines: [{label, color, avg, min, max}], hlines: [{value, label, color}],
  //        bands: [{from, to, color}]} (from/to: bucket indexes, inclusive)
  set(data) {
    this.data = data;
    const legend = this.el.querySelector('.legend');
    legend.innerHTML = data.lines.map((l) => `<span><i style="background:${l.color}"></i>${esc(l.label)}</span>`).join('') +
      (data.hlines || []).map((l) => `<span class="dash"><i style="border-color:${l.color}"></i>${esc(l.label)}</span>`).join('');
    const any = data.lines.some((l) => l.avg.some((v) => v !== null));
    this.el.querySelector('.nodata').hidden = any;
    this.el.dataset.empty = any ? 'false' : 'true';
    this.draw();
  }

  layout(w, h) { return { left: 64, right: 12, top: 10, bottom: 22, pw: w - 76, ph: h - 32 }; }

  bucketAt(x) {
    if (!this.data) return null;
    const { left, pw } = this.layout(this.canvas.clientWidth, this.canvas.clientHeight);
    const i = Math.floor(((x - left) / pw) * this.data.points);
    return i >= 0 && i < this.data.points ? i : null;
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
    this.tip.innerHTML = `<div class="t">${clockSeconds(t)}</div>${rows.join('') || '<div>no sample</div>'}`;
    this.tip.hidden = false;
    const { left, pw } = this.layout(this.canvas.clientWidth, this.canvas.clientHeight);
    const x = left + ((i + 0.5) / d.points) * pw;
    const right = x > left + pw / 2;
    this.tip.style.left = right ? '' : `${x + 12}px`;
    this.tip.style.right = right ? `${this.canvas.clientWidth - x + 12}px` : '';
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

    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    // Shaded intervals first, so the data draws over them.
    for (const b of d.bands || []) {
      ctx.fillStyle = b.color;
      ctx.fillRect(x(b.from), top, x(b.to + 1) - x(b.from), ph);
    }
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
    // Time labels.
    const span = d.end - d.start;
    const tick = TICK_STEPS_S.find((s) => (s / span) * pw >= 90) || TICK_STEPS_S[TICK_STEPS_S.length - 1];
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    for (let t = Math.ceil(d.start / tick) * tick; t <= d.end; t += tick) {
      const xx = left + ((t - d.start) / span) * pw;
      ctx.beginPath(); ctx.moveTo(xx + 0.5, top); ctx.lineTo(xx + 0.5, top + ph); ctx.stroke();
      ctx.fillText(clock(t, tick >= 86400), xx, top + ph + 5);
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
