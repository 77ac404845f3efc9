'use strict';

const crypto = require('node:crypto');
const { STYLE } = require('./page-style');
const { dashboardScript } = require('./page-script');
const { LAYERS } = require('../../layers');

// Where the figures of the moment go: a data block, which no browser runs.
const DATA_MARK = '<!--figures-->';

let page = null;

/**
 * The dashboard (`GET /`): one HTML page with its style and script inline,
 * no other request but `/events` and the changes it sends, and the headers
 * that hold it to that. Its Content-Security-Policy allows the one inline
 * script and the one inline style by their SHA-256 hashes (they are the
 * same for every request, so a hash does what a nonce would, with nothing
 * to generate per request), no `'unsafe-inline'`, connections to its own
 * origin only, and Trusted Types: markup cannot be written from a string,
 * so a backend name or an error text can only ever be shown as text.
 * The figures of the moment come in the page, as JSON in a
 * `<script type="application/json">` data block (never run, so no hash is
 * needed), so that the page shows them before its first event. Built once,
 * at the first request; only the figures change.
 *
 * @param {{history?: object, snapshot?: object | null}} [figures] what the page shows
 *   first: the `history` and `snapshot` events' data (see `DashboardFeed.current`)
 * @returns {{body: string, headers: Record<string, string>}}
 */
function dashboardPage(figures = {}) {
  if (page === null) page = build();
  return { body: page.before + dataBlock(figures) + page.after, headers: page.headers };
}

module.exports = { dashboardPage };

function build() {
  const layers = Object.fromEntries(LAYERS.map(({ name, counts, countsRequests, badge }) => [name, { counts, countsRequests, badge }]));
  const script = `(${dashboardScript.toString()})(${JSON.stringify(layers)});`;
  if (/<\/(script|style)/i.test(script + STYLE)) throw new Error('the dashboard\'s script or style closes its own element');
  const policy = [
    "default-src 'none'",
    `script-src '${hash(script)}'`,
    `style-src '${hash(STYLE)}'`,
    "connect-src 'self'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'"
  ].join('; ');
  const [before, after] = html(STYLE, script).split(DATA_MARK);
  return {
    before,
    after,
    headers: {
      'Content-Security-Policy': policy,
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Resource-Policy': 'same-origin'
    }
  };
}

// JSON inside a script element: no "<" can end it or open a comment.
function dataBlock(figures) {
  const json = JSON.stringify({ history: figures.history || null, snapshot: figures.snapshot || null }).replace(/</g, '\\u003c');
  return `<script type="application/json" id="figures">${json}</script>`;
}

function hash(text) {
  return `sha256-${crypto.createHash('sha256').update(text, 'utf8').digest('base64')}`;
}

function html(style, script) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>lila</title>
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Ccircle cx='8' cy='8' r='7' fill='%237c5cbf'/%3E%3C/svg%3E">
<style>${style}</style>
</head>
<body>
<header>
  <div class="title">
    <h1>lila <span id="mode" class="muted"></span></h1>
    <p id="live" class="live" role="status" data-live="connecting">connecting…</p>
  </div>
  <dl id="facts" class="facts">
    <div><dt>listening on</dt><dd id="listen">–</dd></div>
    <div><dt>version</dt><dd id="version">–</dd></div>
    <div><dt>uptime</dt><dd id="uptime">–</dd></div>
    <div><dt>processes</dt><dd id="workers">–</dd></div>
  </dl>
</header>
<main>
  <section class="tiles" aria-label="All backends">
    <div class="tile"><span class="label" id="rate-label">requests/s</span><span class="value" id="total-rate">–</span><span class="note" id="total-rate-note"></span></div>
    <div class="tile"><span class="label" id="errors-label">errors/s</span><span class="value" id="total-errors">–</span><span class="note" id="total-errors-note"></span></div>
    <div class="tile"><span class="label">error rate</span><span class="value" id="total-error-rate">–</span><span class="note" id="total-error-rate-note"></span></div>
    <div class="tile"><span class="label">p50 / p99</span><span class="value" id="total-latency">–</span><span class="note" id="total-latency-note"></span></div>
    <div class="tile"><span class="label">connections now</span><span class="value" id="open-connections">–</span><span class="note" id="open-connections-note"></span></div>
    <div class="tile"><span class="label">in flight</span><span class="value" id="total-active">–</span><span class="note"></span></div>
    <div class="tile" id="queue-tile" hidden><span class="label">queued</span><span class="value" id="queued">–</span><span class="note"></span></div>
  </section>
  <section class="charts" aria-label="The last 5 minutes">
    <figure><figcaption><span id="chart-rate-title">requests/s</span><span id="chart-rate-scale"></span></figcaption><svg id="chart-rate" class="chart" viewBox="0 0 300 80" preserveAspectRatio="none" role="img" aria-label="requests per second, last 5 minutes"></svg></figure>
    <figure><figcaption><span>errors/s</span><span id="chart-errors-scale"></span></figcaption><svg id="chart-errors" class="chart errors" viewBox="0 0 300 80" preserveAspectRatio="none" role="img" aria-label="errors per second, last 5 minutes"></svg></figure>
    <figure><figcaption><span>p99</span><span id="chart-p99-scale"></span></figcaption><svg id="chart-p99" class="chart latency" viewBox="0 0 300 80" preserveAspectRatio="none" role="img" aria-label="99th percentile duration, last 5 minutes"></svg></figure>
  </section>
  <section id="listeners-section" aria-labelledby="listeners-title" hidden>
    <div class="bar"><h2 id="listeners-title">Listeners and routes</h2></div>
    <div id="listeners" class="listeners"></div>
  </section>
  <section id="fleet" aria-labelledby="fleet-title" hidden>
    <div class="bar">
      <div class="title"><h2 id="fleet-title">Fleet</h2><p id="store-live" class="live" role="status" data-live="connecting">–</p></div>
    </div>
    <p class="fleet-line"><span id="store-url" class="store-url"></span> <span class="muted">·</span> <span id="store-revision"></span></p>
    <div class="scroll">
      <table id="members">
        <thead><tr><th>member</th><th>listeners</th><th>revision</th><th>applied</th><th>last error</th></tr></thead>
        <tbody></tbody>
      </table>
    </div>
  </section>
  <section aria-labelledby="backends-title">
    <div class="bar">
      <h2 id="backends-title">Backends</h2>
      <label>each row's chart
        <select id="row-chart">
          <option value="per_second">requests/s</option>
          <option value="errors_per_second">errors/s</option>
          <option value="p99_seconds">p99</option>
        </select>
      </label>
    </div>
    <div class="scroll">
      <table id="backends">
        <thead>
          <tr>
            <th>backend</th><th>state</th><th>weight</th><th>in flight</th><th id="rate-head">req/s</th><th>errors</th>
            <th>p50 / p99</th><th>last 5 min</th><th>last error</th><th>health check</th><th class="actions-cell">actions</th>
          </tr>
        </thead>
        <tbody></tbody>
      </table>
    </div>
  </section>
  <section id="certificates" aria-labelledby="certificates-title" hidden>
    <h2 id="certificates-title">Certificates (ACME)</h2>
    <div class="scroll">
      <table id="certificates-table">
        <thead><tr><th>name</th><th>state</th><th>expires</th><th>next renewal</th><th>challenge</th><th>last error</th></tr></thead>
        <tbody></tbody>
      </table>
    </div>
  </section>
  <section id="admin" class="admin" aria-label="Changes">
    <p id="read-only" class="note" hidden>Read-only: this admin API takes no changes from web pages. Start lila with <code>--admin-token</code> to drain, enable and weigh backends from here.</p>
    <form id="token-form" class="token" hidden>
      <label>admin token <input id="token" type="password" autocomplete="off" spellcheck="false"></label>
      <button type="submit">use</button>
      <button type="button" id="forget">forget</button>
      <span id="token-state" class="muted"></span>
    </form>
    <p id="message" class="message" role="status" aria-live="polite"></p>
  </section>
</main>
${DATA_MARK}
<script>${script}</script>
</body>
</html>
`;
}
