// A route the console does not have: says so, with the way to every page (never a silent Fleet).
import { html, render } from '../format.js';

export default {
  title: () => 'Not found',
  mount(root, ctx) {
    root.innerHTML = '<div class="notfound"></div>';
    render(root.firstChild, html`<div class="card empty" data-notfound="${ctx.route.path}"><b>There is no page “#/${ctx.route.path}”</b>
      The address names no page of this console. Go to
      <a href="#/fleet">Fleet</a> · <a href="#/jobs">Jobs</a> · <a href="#/teams">Teams</a> · <a href="#/alerts">Alerts</a> ·
      <a href="#/findings">Findings</a> · <a href="#/reclaim">Reclaim</a>.</div>`);
  },
  async update() {},
};
