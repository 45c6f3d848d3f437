// The time range of a page, kept in the URL so that a link or a reload shows the same window.
//
// In the hash's query (#/gpu/3?range=6h, #/job/42?from=1764669600&to=1764673200):
//   range=<15m|1h|6h|24h|7d>       a live window ending now (the default: 1h)
//   from=<unix s>&to=<unix s>      an absolute one (from < to; it wins over `range`)
//
// The API pages use (three functions):
//   rangeFromQuery(query, now) -> {start, end, live, label, name, error}
//       query: URLSearchParams of the hash; now: the end of a live window in Unix seconds (pages
//       pass ctx.now, the agent's latest snapshot time, which is simulated time under
//       --simulate; default: the wall clock). name: '1h' etc. for a live range, '' otherwise.
//       A bad from/to (not a number, from >= to) gives the default live range and `error` says
//       why, so a mistyped link still shows data.
//   setRange({name} | {from, to})
//       writes the range into the URL (history.pushState: Back undoes a zoom) and tells every
//       toolbar (a 'gw-range' event on window; a page without a toolbar may listen to it too).
//       Charts call it on drag-to-zoom (chart.js).
//   rangeToolbar(parent, onChange) -> {range(now), destroy()}
//       appends the range controls to `parent`: the live ranges, from/to inputs for an absolute
//       range, "live" to return to a live window, and the label of what is shown. onChange(range)
//       runs whenever the URL's range changes (a button, the inputs, a chart's zoom). The URL is
//       the only state: range(now) reads it. destroy() (in the page's unmount) removes it.

export const LIVE_RANGES = [['15m', 900], ['1h', 3600], ['6h', 21600], ['24h', 86400], ['7d', 604800]];
export const DEFAULT_RANGE = '1h';
// The shortest absolute range (a zoom narrower than this is widened around its middle).
export const MIN_SPAN_S = 60;

const pad = (n) => String(n).padStart(2, '0');
const day = (t) => `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())}`;
const hm = (t) => `${pad(t.getHours())}:${pad(t.getMinutes())}`;

// "2026-12-02 10:00 – 11:30" (one date when both ends fall on the same day).
export function rangeLabel(start, end) {
  const a = new Date(start * 1000);
  const b = new Date(end * 1000);
  return day(a) === day(b) ? `${day(a)} ${hm(a)} – ${hm(b)}` : `${day(a)} ${hm(a)} – ${day(b)} ${hm(b)}`;
}

// The hash's query of the current URL.
export function hashQuery() {
  const q = location.hash.split('?')[1];
  return new URLSearchParams(q || '');
}

export function rangeFromQuery(query, now = Date.now() / 1000) {
  const live = (name, error) => {
    const r = LIVE_RANGES.find(([n]) => n === name) || LIVE_RANGES.find(([n]) => n === DEFAULT_RANGE);
    return { start: now - r[1], end: now, live: true, name: r[0], label: `last ${r[0]}`, ...(error ? { error } : {}) };
  };
  if (!query.has('from') && !query.has('to')) {
    const name = query.get('range');
    if (name !== null && !LIVE_RANGES.some(([n]) => n === name)) {
      return live(DEFAULT_RANGE, `range=${name} is not one of ${LIVE_RANGES.map(([n]) => n).join(', ')}`);
    }
    return live(name);
  }
  const num = (key) => (/^\d+(\.\d+)?$/.test(query.get(key) || '') ? Number(query.get(key)) : NaN);
  const from = num('from');
  const to = num('to');
  if (Number.isNaN(from) || Number.isNaN(to)) {
    return live(query.get('range'), 'from and to must both be Unix times in seconds');
  }
  if (from >= to) return live(query.get('range'), 'from must be before to');
  return { start: from, end: to, live: false, name: '', label: rangeLabel(from, to) };
}

// The URL with the range set in its hash query (other parameters kept).
function urlWith(next) {
  const [path, q] = (location.hash || '#/').split('?');
  const query = new URLSearchParams(q || '');
  query.delete('range');
  query.delete('from');
  query.delete('to');
  if (next.name) query.set('range', next.name);
  else {
    let from = Math.floor(next.from);
    let to = Math.ceil(next.to);
    if (to - from < MIN_SPAN_S) {
      const mid = (from + to) / 2;
      from = Math.floor(mid - MIN_SPAN_S / 2);
      to = from + MIN_SPAN_S;
    }
    query.set('from', String(from));
    query.set('to', String(to));
  }
  const text = query.toString();
  return `${path}${text ? `?${text}` : ''}`;
}

export function setRange(next) {
  const url = urlWith(next);
  if (url === location.hash) return;
  history.pushState(null, '', url);
  window.dispatchEvent(new Event('gw-range'));
}

// datetime-local values are local time, as every time in the console.
const toInput = (s) => { const t = new Date(s * 1000); return `${day(t)}T${hm(t)}`; };
const fromInput = (v) => { const ms = new Date(v).getTime(); return Number.isNaN(ms) ? NaN : ms / 1000; };

export function rangeToolbar(parent, onChange) {
  const el = document.createElement('div');
  el.className = 'rangebar';
  el.innerHTML = `<div class="seg" role="group" aria-label="live range">${LIVE_RANGES.map(([n]) => `<button type="button" data-range="${n}">${n}</button>`).join('')}</div>
    <form class="abs" autocomplete="off"><input type="datetime-local" name="from" aria-label="from" required><span>–</span><input type="datetime-local" name="to" aria-label="to" required><button type="submit">Show</button></form>
    <button type="button" class="golive" hidden>● Back to live</button><span class="rlabel"></span><span class="rerror" role="alert" hidden></span>`;
  parent.appendChild(el);
  const form = el.querySelector('form');
  const error = el.querySelector('.rerror');
  let lastNow = Date.now() / 1000;
  // What was wrong with the times typed: shown until the user edits them or picks a range (the
  // page's refreshes repaint the bar every few seconds and must not wipe it).
  let typedError = '';

  const paint = () => {
    const r = rangeFromQuery(hashQuery(), lastNow);
    el.dataset.live = String(r.live);
    el.querySelectorAll('[data-range]').forEach((b) => b.classList.toggle('on', r.live && b.dataset.range === r.name));
    el.querySelector('.golive').hidden = r.live;
    el.querySelector('.rlabel').textContent = r.label;
    const message = typedError || r.error || '';
    error.hidden = !message;
    error.textContent = message;
    // The inputs follow the URL unless the user is typing in them or they hold what was wrong.
    if (!typedError && !form.contains(document.activeElement)) {
      form.from.value = toInput(r.start);
      form.to.value = toInput(r.end);
    }
    return r;
  };
  el.querySelectorAll('[data-range]').forEach((b) => b.addEventListener('click', () => { typedError = ''; setRange({ name: b.dataset.range }); }));
  form.addEventListener('input', () => {
    if (!typedError) return;
    typedError = '';
    paint();
  });
  el.querySelector('.golive').addEventListener('click', () => {
    typedError = '';
    const r = rangeFromQuery(hashQuery(), lastNow);
    // Back to live keeps the window's length, rounded up to a live range.
    const span = r.end - r.start;
    const fit = LIVE_RANGES.find(([, s]) => s >= span) || LIVE_RANGES[LIVE_RANGES.length - 1];
    setRange({ name: fit[0] });
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const from = fromInput(form.from.value);
    const to = fromInput(form.to.value);
    if (Number.isNaN(from) || Number.isNaN(to) || from >= to) {
      typedError = Number.isNaN(from) || Number.isNaN(to) ? 'Enter both times.' : 'From must be before to.';
      paint();
      return;
    }
    typedError = '';
    form.querySelectorAll('input').forEach((i) => i.blur());
    setRange({ from, to });
  });
  const detach = () => window.removeEventListener('gw-range', changed);
  const changed = () => {
    if (!el.isConnected) { detach(); return; }
    onChange(paint());
  };
  window.addEventListener('gw-range', changed);
  paint();
  return {
    range(now) {
      lastNow = now;
      return paint();
    },
    destroy() { detach(); el.remove(); },
  };
}
