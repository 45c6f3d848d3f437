// The console's frame around the pages, independent of any page (loaded by index.html):
//  - the tab menu on narrow screens: a button naming the current page (with the alerts badge)
//    opens the navigation as a list; choosing a page, Escape or a click elsewhere closes it;
//  - wide tables: every `.scroll-x` (and `.tablewrap`) wrapper is marked `overflows` when its
//    content is wider than it and `more-right` while more of it lies to the right (style.css draws
//    the hint from these); a page that re-renders a table keeps its horizontal scroll position.
const header = document.querySelector('header.top');
const nav = header.querySelector('nav');
const menu = document.getElementById('menu');

function setOpen(open) {
  header.classList.toggle('menu-open', open);
  menu.setAttribute('aria-expanded', String(open));
}

// The button shows the current page's tab and the alerts badge; app.js marks the active tab.
function syncMenu() {
  const active = nav.querySelector('a.active');
  const label = active ? active.firstChild.textContent.trim() : 'Menu';
  const current = menu.querySelector('.current');
  if (current.textContent !== label) current.textContent = label;
  const source = nav.querySelector('[data-nav="alerts"] .badge');
  const badge = menu.querySelector('.badge');
  if (source && (badge.textContent !== source.textContent || badge.className !== source.className)) {
    badge.textContent = source.textContent;
    badge.className = source.className;
  }
}

menu.addEventListener('click', (e) => {
  e.stopPropagation();
  setOpen(!header.classList.contains('menu-open'));
});
nav.addEventListener('click', (e) => { if (e.target.closest('a')) setOpen(false); });
document.addEventListener('click', (e) => { if (!header.contains(e.target)) setOpen(false); });
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && header.classList.contains('menu-open')) { setOpen(false); menu.focus(); }
});
window.addEventListener('hashchange', () => setOpen(false));
new MutationObserver(syncMenu).observe(nav, { subtree: true, attributes: true, childList: true, characterData: true });
syncMenu();

// Wide tables.
const SCROLLERS = '.scroll-x, .tablewrap';
const memory = new Map();  // "<route>#<n>" (the n-th wrapper on the page) -> scrollLeft
let pending = false;

const keyOf = (el, i) => `${location.hash.split('?')[0]}#${i}`;

function mark(el) {
  const over = el.scrollWidth > el.clientWidth + 1;
  el.classList.toggle('overflows', over);
  el.classList.toggle('more-right', over && el.scrollLeft + el.clientWidth < el.scrollWidth - 1);
}

function scanScrollers() {
  pending = false;
  document.querySelectorAll(`#main ${SCROLLERS}`).forEach((el, i) => {
    const key = keyOf(el, i);
    if (!el.dataset.scrollx) {
      el.dataset.scrollx = key;
      if (memory.has(key)) el.scrollLeft = memory.get(key);
      el.addEventListener('scroll', () => { memory.set(el.dataset.scrollx, el.scrollLeft); mark(el); }, { passive: true });
    }
    mark(el);
  });
}

function scheduleScan() {
  if (pending) return;
  pending = true;
  queueMicrotask(scanScrollers);
}

new MutationObserver(scheduleScan).observe(document.getElementById('main'), { subtree: true, childList: true });
window.addEventListener('resize', scheduleScan);
window.addEventListener('hashchange', () => memory.clear());
scheduleScan();
