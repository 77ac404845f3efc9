'use strict';

/**
 * The dashboard's script. It runs in the browser: page.js inlines its
 * source (a module, so that a single-file build carries it) and hashes it
 * for the Content-Security-Policy; Node never calls it. Everything it shows
 * that comes from lila goes in through textContent or SVG attributes, never
 * as markup.
 *
 * @param {Record<string, {counts: string, countsRequests: boolean, badge: {plain: string, tls: string}}>} layers
 *   what the page asks of each layer (layers/), by name, the default first
 */
function dashboardScript(layers) {
  'use strict';

  const TOKEN_KEY = 'lila.adminToken';
  const WINDOW_MS = 5 * 60 * 1000;
  const STALE_MS = 3000;
  const RETRY_MS = 2000;
  const SVG = 'http://www.w3.org/2000/svg';
  const METRICS = ['per_second', 'errors_per_second', 'p99_seconds'];
  const COLUMNS = [
    ['backend', 'backend'], ['state', 'state'], ['weight', 'weight'], ['active', 'in flight'], ['rate', 'req/s'],
    ['errors', 'errors'], ['latency', 'p50 / p99'], ['chart', 'last 5 min'], ['lastError', 'last error'],
    ['check', 'health check'], ['actions', 'actions']
  ];
  const MEMBER_COLUMNS = [['member', 'member'], ['listeners', 'listeners'], ['revision', 'revision'], ['applied', 'applied'], ['lastError', 'last error']];
  const $ = (id) => document.getElementById(id);
  // A name that is no layer's is shown as the default layer.
  const layerOf = (name) => (Object.hasOwn(layers, name) ? layers[name] : Object.values(layers)[0]);

  const view = {
    frame: null,
    receivedAt: 0,
    actions: null,
    times: [],
    totals: emptySeries(0),
    backends: new Map(),
    // The history's last second, every rate of it: shown until the page's own first second.
    last: null,
    rows: new Map(),
    groups: new Map(),
    pools: new Map(),
    // With --store: the fleet's members' rows, by member id.
    members: new Map(),
    // The listeners as last drawn (without their counts), and what each frame updates in them.
    listenersKey: null,
    routes: []
  };

  // A backend's name is unique within its pool only: with a config file, rows and series
  // are the pool's and the name's.
  function keyOf(backend) {
    return backend.pool === undefined ? backend.name : JSON.stringify([backend.pool, backend.name]);
  }

  function emptySeries(length) {
    const series = {};
    for (const metric of METRICS) series[metric] = new Array(length).fill(null);
    return series;
  }

  // ---- the stream -------------------------------------------------------------------------

  let source = null;

  function connect() {
    if (source !== null || document.hidden) return;
    const current = new EventSource('/events');
    source = current;
    current.addEventListener('open', () => setLive('live', 'live'));
    current.addEventListener('history', (event) => onHistory(JSON.parse(event.data)));
    current.addEventListener('snapshot', (event) => onSnapshot(JSON.parse(event.data)));
    current.addEventListener('error', () => {
      if (source !== current) return;
      setLive('lost', 'reconnecting…');
      // An answer that is not a stream (lila restarting behind a proxy, ...) ends the
      // EventSource for good: start another.
      if (current.readyState !== EventSource.CLOSED) return;
      source = null;
      setTimeout(connect, RETRY_MS);
    });
  }

  // A hidden tab holds no stream: it costs lila nothing, and a browser's few
  // connections per site stay free for the tab in front (the history comes back with it).
  function pause() {
    if (source === null) return;
    source.close();
    source = null;
    setLive('paused', 'paused while hidden');
  }

  function onHistory(history) {
    view.times = history.times.slice();
    view.totals = {};
    for (const metric of METRICS) view.totals[metric] = history.totals[metric].slice();
    view.backends = new Map();
    for (const backend of history.backends) {
      const series = {};
      for (const metric of METRICS) series[metric] = backend[metric].slice();
      view.backends.set(keyOf(backend), series);
    }
    view.last = history.last !== null && typeof history.last === 'object' ? history.last : null;
  }

  function onSnapshot(frame) {
    view.frame = frame;
    view.receivedAt = Date.now();
    if (frame.totals.per_second !== null) record(frame);
    render(frame);
  }

  function record(frame) {
    const last = view.times.length === 0 ? -Infinity : view.times[view.times.length - 1];
    // The history the stream starts with already has the latest snapshot.
    if (frame.time <= last) return;
    view.times.push(frame.time);
    for (const metric of METRICS) view.totals[metric].push(frame.totals[metric]);
    const seen = new Set();
    for (const backend of frame.backends) {
      const key = keyOf(backend);
      let series = view.backends.get(key);
      if (series === undefined) {
        series = emptySeries(view.times.length - 1);
        view.backends.set(key, series);
      }
      for (const metric of METRICS) series[metric].push(backend[metric]);
      seen.add(key);
    }
    for (const [name, series] of view.backends) {
      if (!seen.has(name)) for (const metric of METRICS) series[metric].push(null);
    }
    const oldest = frame.time - WINDOW_MS;
    let stale = 0;
    while (stale < view.times.length && view.times[stale] < oldest) stale++;
    if (stale === 0) return;
    view.times.splice(0, stale);
    for (const metric of METRICS) view.totals[metric].splice(0, stale);
    for (const [name, series] of view.backends) {
      for (const metric of METRICS) series[metric].splice(0, stale);
      if (!seen.has(name) && series.per_second.every((value) => value === null)) view.backends.delete(name);
    }
  }

  // ---- rendering --------------------------------------------------------------------------

  function render(frame) {
    const pools = poolsOf(frame);
    // With a config file, requests and connections are counted together: connections only
    // when every pool's layer counts connections (tcp).
    const tcp = pools === null ? !layerOf(frame.layer).countsRequests : pools.length > 0 && pools.every((pool) => !layerOf(pool.layer).countsRequests);
    const unit = tcp ? 'connections/s' : 'requests/s';
    if (pools === null) {
      setText($('mode'), `${frame.mode} · ${frame.layer}`);
      setText($('listen'), frame.listen || '–');
    } else {
      const listeners = Array.isArray(frame.listeners) ? frame.listeners : [];
      setText($('mode'), `${counted(pools.length, 'pool')} · ${counted(listeners.length, 'listener')}`);
      setText($('listen'), listeners.length === 0 ? '–' : listeners.map((listener) => listener.address).join(', '));
    }
    setText($('version'), frame.version);
    setText($('workers'), frame.workers === null || frame.workers === undefined ? '1 process' : `${frame.workers} workers`);
    setText($('chart-rate-title'), unit);
    setText($('rate-head'), tcp ? 'conn/s' : 'req/s');
    setText($('row-chart').options[0], unit);
    renderTotals(frame, tcp);
    tick();
    const range = chartRange();
    // No second drawn yet: "max 0" over an empty chart would read as no traffic.
    const scale = (text) => (view.times.length === 0 ? 'waiting for the first second' : `max ${text}`);
    setText($('chart-rate-scale'), scale(rate(draw($('chart-rate'), view.totals.per_second, range, 300, 80))));
    setText($('chart-errors-scale'), scale(rate(draw($('chart-errors'), view.totals.errors_per_second, range, 300, 80))));
    setText($('chart-p99-scale'), scale(duration(draw($('chart-p99'), view.totals.p99_seconds, range, 300, 80))));
    renderListeners(frame, pools);
    renderAdmin(frame);
    renderRows(frame, range);
    renderFleet(frame);
    renderCertificates(frame);
  }

  // The rates to show of a backend (or of the whole), and where they come from. A rate needs
  // two samples, and lila samples only while a page listens: a page that opens when none did
  // has its first second a second later. Until then it shows what is known rather than a dash
  // (which reads as "dead"): the last second the history has, stamped with its time, as
  // Grafana shows a series' last value; else the counts since start beside the error rate and
  // p50/p99 since start, as HAProxy's stats page shows each rate beside its total and
  // Traefik's dashboard shows totals. No rate is made up from them: an average since start
  // would pass for the traffic of now.
  function shownRates(rates, of) {
    if (typeof rates.per_second === 'number') return { from: 'second', ...rates };
    const last = lastOf(of);
    if (last !== null && typeof last.per_second === 'number') return { from: 'last', ...last };
    if (rates.so_far !== null && typeof rates.so_far === 'object') return { from: 'start', ...rates.so_far };
    return { from: 'none' };
  }

  // The history's last second of a backend, or of the whole (null); null when it has none.
  function lastOf(backend) {
    if (view.last === null) return null;
    if (backend === null) return view.last.totals;
    return view.last.backends.find((other) => keyOf(other) === keyOf(backend)) || null;
  }

  function renderTotals(frame, tcp) {
    const { totals } = frame;
    const unit = tcp ? 'connections' : 'requests';
    const shown = shownRates(totals, null);
    const soFar = totals.so_far !== null && typeof totals.so_far === 'object' ? totals.so_far : null;
    const inAll = (count) => (soFar === null ? '' : `${count.toLocaleString('en')} in all`);
    const when = shown.from === 'last' ? `at ${clock(view.last.time)}` : shown.from === 'start' ? 'since start' : shown.from === 'second' ? 'last second' : '';
    // A quiet second has no error rate nor p50/p99: say why they are dashes.
    const quiet = shown.from !== 'none' && shown.error_rate === null ? `no ${unit} ended ${shown.from === 'start' ? 'yet' : when}` : null;
    if (shown.from === 'start') {
      setText($('rate-label'), unit);
      setText($('total-rate'), shown.count.toLocaleString('en'));
      setText($('total-rate-note'), 'in all so far');
      setText($('errors-label'), 'errors');
      setText($('total-errors'), shown.errors.toLocaleString('en'));
      setText($('total-errors-note'), 'in all so far');
    } else {
      setText($('rate-label'), `${unit}/s`);
      setText($('total-rate'), rate(shown.per_second));
      setText($('total-rate-note'), shown.from === 'last' ? when : inAll(soFar === null ? 0 : soFar.count));
      setText($('errors-label'), 'errors/s');
      setText($('total-errors'), rate(shown.errors_per_second));
      setText($('total-errors-note'), shown.from === 'last' ? when : inAll(soFar === null ? 0 : soFar.errors));
    }
    setText($('total-error-rate'), percent(shown.error_rate));
    setText($('total-error-rate-note'), quiet === null ? when : quiet);
    setText($('total-latency'), `${duration(shown.p50_seconds)} / ${duration(shown.p99_seconds)}`);
    setText($('total-latency-note'), quiet === null ? when : quiet);
    for (const id of ['total-rate', 'total-errors', 'total-error-rate', 'total-latency']) $(id).classList.toggle('earlier', shown.from === 'last' || shown.from === 'start');
    setText($('open-connections'), String(frame.open_connections));
    setText($('open-connections-note'), typeof frame.connections === 'number' ? `${frame.connections.toLocaleString('en')} accepted in all` : '');
    setText($('total-active'), String(totals.active));
    // Requests waiting for a backend at its limit, when lila has a queue (see /status).
    const queued = frame.queue !== null && typeof frame.queue === 'object' && typeof frame.queue.length === 'number';
    $('queue-tile').hidden = !queued;
    if (queued) setText($('queued'), typeof frame.queue.max === 'number' ? `${frame.queue.length} of ${frame.queue.max}` : String(frame.queue.length));
  }

  // What listens, and where each route sends its requests: the config's listeners, or a
  // command line's one (its route `*` to its one pool, shown as every request to the
  // backends below: that pool has no name the user gave).
  function renderListeners(frame, pools) {
    const listeners = Array.isArray(frame.listeners) ? frame.listeners : [];
    $('listeners-section').hidden = listeners.length === 0;
    const single = pools === null;
    const key = JSON.stringify([single, listeners.map((listener) => ({ ...listener, routes: listener.routes.map((route) => ({ ...route, requests: 0 })) }))]);
    if (key !== view.listenersKey) {
      view.listenersKey = key;
      view.routes = [];
      $('listeners').replaceChildren(...listeners.map((listener) => listenerCard(listener, single)));
    }
    // Each route's requests, and how many backends of its pools are up.
    const up = new Map();
    for (const backend of frame.backends) {
      const pool = single ? '' : backend.pool;
      const count = up.get(pool) || { up: 0, all: 0 };
      count.all++;
      if (backend.state === 'up') count.up++;
      up.set(pool, count);
    }
    const routes = listeners.flatMap((listener) => listener.routes);
    view.routes.forEach((shown, i) => {
      const route = routes[i];
      if (route === undefined) return;
      setText(shown.requests, typeof route.requests === 'number' ? `${route.requests.toLocaleString('en')} ${route.requests === 1 ? 'request' : 'requests'}` : '');
      if (shown.cache !== null) setText(shown.cache, cacheText(route.cache));
      for (const target of shown.targets) {
        const count = up.get(target.pool) || { up: 0, all: 0 };
        setText(target.health, count.all === 0 ? 'no backends' : `${count.up} of ${count.all} up`);
        target.health.classList.toggle('error-text', count.up === 0);
      }
    });
  }

  function listenerCard(listener, single) {
    const card = div('listener');
    const head = div('listener-head');
    const address = span('listen-address', '');
    setWrapped(address, String(listener.address));
    const tls = listener.tls === true;
    const scheme = layerOf(listener.layer).badge[tls ? 'tls' : 'plain'];
    head.append(address, span('badge', scheme));
    if (typeof listener.redirect_http === 'string') {
      const redirect = span('small', '');
      redirect.append('plain http on ');
      const where = span('', '');
      setWrapped(where, listener.redirect_http);
      redirect.append(where, ': redirected to https');
      head.append(redirect);
    }
    const list = document.createElement('ul');
    list.className = 'routes';
    for (const route of listener.routes) list.append(routeItem(route, single));
    card.append(head, list);
    return card;
  }

  function routeItem(route, single) {
    const item = document.createElement('li');
    // A command line wrote no route: its one route is said in words, not as `*`.
    const match = span(single ? 'match every' : 'match', '');
    if (single) setText(match, 'every request');
    else setWrapped(match, String(route.match));
    if (!single && route.match === '*') match.title = 'any host and path no other route matches';
    const to = span('to', '');
    const shown = { requests: span('small count', ''), targets: [], cache: null };
    if (route.answers_itself === true) {
      to.append(span('muted', 'lila answers it itself (a redirect or a fixed answer)'));
    } else if (single) {
      const health = span('small', '');
      to.append(span('', 'the backends below'), ' ', health);
      shown.targets.push({ pool: '', health });
    } else {
      const total = route.pools.reduce((sum, target) => sum + target.weight, 0);
      route.pools.forEach((target, i) => {
        if (i > 0) to.append(span('muted', ' · '));
        const part = span('target', '');
        const name = span('pool-name', '');
        setWrapped(name, `pool ${target.pool}`);
        const health = span('small', '');
        part.append(name);
        if (route.pools.length > 1) part.append(' ', span('share', share(target.weight, total)));
        part.append(' ', health);
        to.append(part);
        shown.targets.push({ pool: target.pool, health });
      });
      if (typeof route.hash_key === 'string') to.append(span('small', ` · by ${route.hash_key}`));
    }
    // --mirror, as the startup line says it: copies go there too, their answers thrown away.
    if (Array.isArray(route.mirror) && route.mirror.length > 0) {
      const mirrored = span('small mirror', '');
      setWrapped(mirrored, ` · mirrored to ${route.mirror.map((target) => `pool ${target.pool}${target.percent === 100 ? '' : ` (${target.percent}%)`}`).join(', ')}`);
      to.append(mirrored);
    }
    // --cache: the share of its lookups answered from the store, said again each frame.
    if (route.cache !== undefined && route.cache !== null) {
      shown.cache = span('small cache', cacheText(route.cache));
      to.append(shown.cache);
    }
    item.append(match, span('arrow', '→'), to, shown.requests);
    view.routes.push(shown);
    return item;
  }

  // What a --cache route's cache did (/status's `cache`): its hit ratio and the lookups by result.
  function cacheText(cache) {
    if (cache === null || typeof cache !== 'object') return '';
    const parts = [['hit', 'hit'], ['stale', 'stale'], ['revalidated', 'revalidated'], ['miss', 'miss']]
      .filter(([key]) => typeof cache[key] === 'number' && cache[key] > 0)
      .map(([key, word]) => `${cache[key].toLocaleString('en')} ${word}`);
    if (typeof cache.hit_ratio !== 'number') return ' · cached: nothing looked up yet';
    return ` · cached: ${Math.round(cache.hit_ratio * 100)}% from the store (${parts.join(', ')})`;
  }

  // A pool's share of a weighted split, in percent.
  function share(weight, total) {
    if (total <= 0) return '0%';
    const value = (weight / total) * 100;
    return `${Number.isInteger(value) ? value : value < 10 ? value.toFixed(1) : Math.round(value)}%`;
  }

  // --store: whether the store answers, the revision this member runs beside the store's, and
  // every member as the store lists them (/status's `store`).
  function renderFleet(frame) {
    const store = frame.store !== null && typeof frame.store === 'object' ? frame.store : null;
    $('fleet').hidden = store === null;
    if (store === null) return;
    const up = store.up === true;
    const live = $('store-live');
    live.dataset.live = up ? 'live' : 'lost';
    setText(live, up ? 'store up' : 'store lost: retrying');
    setWrapped($('store-url'), String(store.url));
    const [text, behind] = revisionText(store, up);
    setText($('store-revision'), text);
    $('store-revision').classList.toggle('behind', behind);
    const members = Array.isArray(store.members) ? store.members : [];
    const ids = new Set();
    const wanted = members.map((member) => {
      const id = String(member.id);
      ids.add(id);
      let row = view.members.get(id);
      if (row === undefined) {
        row = createMemberRow();
        view.members.set(id, row);
      }
      updateMemberRow(row, member, store);
      return row.tr;
    });
    for (const id of view.members.keys()) if (!ids.has(id)) view.members.delete(id);
    const body = $('members').tBodies[0];
    const current = body.children;
    if (current.length !== wanted.length || !wanted.every((tr, i) => current[i] === tr)) body.replaceChildren(...wanted);
  }

  // This member's revision against the store's (as last seen while the store is lost), and
  // whether it is behind.
  function revisionText(store, up) {
    const runs = `this member runs revision ${store.applied_revision}`;
    if (typeof store.config_revision !== 'number' || store.config_revision <= 0) return [`${runs}; the store's is not known yet`, false];
    const seen = up ? '' : ' when last seen';
    if (store.applied_revision < store.config_revision) return [`${runs}, behind the store's ${store.config_revision}${seen}`, true];
    return [`${runs}, the store's latest${seen}`, false];
  }

  function createMemberRow() {
    const tr = document.createElement('tr');
    const cells = {};
    for (const [key, label] of MEMBER_COLUMNS) {
      const td = document.createElement('td');
      td.dataset.label = label;
      td.className = `col-${key}`;
      cells[key] = div('cell');
      td.append(cells[key]);
      tr.append(td);
    }
    const row = {
      tr,
      host: span('name', ''),
      self: span('badge', 'this one'),
      id: div('small'),
      registered: div('small'),
      listeners: div(''),
      revision: div(''),
      appliedAt: div(''),
      appliedAgo: div('small'),
      lastError: span('error-text', '')
    };
    cells.member.append(row.host, row.self, row.id, row.registered);
    cells.listeners.append(row.listeners);
    cells.revision.append(row.revision);
    cells.applied.append(row.appliedAt, row.appliedAgo);
    cells.lastError.append(row.lastError);
    return row;
  }

  function updateMemberRow(row, member, store) {
    setWrapped(row.host, String(member.host));
    row.self.hidden = member.id !== store.self;
    setWrapped(row.id, typeof member.version === 'string' ? `${member.id} · ${member.version}` : String(member.id));
    setText(row.registered, member.registered === false ? 'not registered while the store is lost' : '');
    const listeners = Array.isArray(member.listeners) ? member.listeners : [];
    setWrapped(row.listeners, listeners.length === 0 ? '–' : listeners.join(', '));
    const behind = typeof member.config_revision === 'number' && typeof store.config_revision === 'number' && member.config_revision < store.config_revision;
    const runs = typeof member.config_revision === 'number' ? String(member.config_revision) : '–';
    setText(row.revision, behind ? `${runs}, behind ${store.config_revision}` : runs);
    row.revision.classList.toggle('behind', behind);
    const at = typeof member.applied_at === 'string' ? Date.parse(member.applied_at) : NaN;
    setText(row.appliedAt, Number.isNaN(at) ? '–' : clock(at));
    setText(row.appliedAgo, Number.isNaN(at) ? '' : `${ago(at)} ago`);
    setWrapped(row.lastError, member.last_error === null || member.last_error === undefined ? '–' : String(member.last_error));
  }

  // --acme: each name lila obtains a certificate for, its state and dates (/status's `acme`).
  function renderCertificates(frame) {
    const names = Array.isArray(frame.acme) ? frame.acme : null;
    $('certificates').hidden = names === null;
    if (names === null) return;
    const body = $('certificates-table').tBodies[0];
    while (body.rows.length > names.length) body.deleteRow(-1);
    while (body.rows.length < names.length) {
      const row = body.insertRow();
      for (let i = 0; i < 6; i++) row.insertCell();
    }
    names.forEach((entry, index) => {
      const cells = body.rows[index].cells;
      setText(cells[0], String(entry.name));
      setText(cells[1], String(entry.state));
      cells[1].className = entry.state === 'failed' ? 'down' : entry.state === 'valid' ? 'up' : '';
      setText(cells[2], day(entry.notAfter));
      setText(cells[3], day(entry.nextRenewal));
      setText(cells[4], entry.challenge || '–');
      setText(cells[5], entry.lastError || '');
    });
  }

  function day(iso) {
    return typeof iso === 'string' ? iso.slice(0, 16).replace('T', ' ') + ' UTC' : '–';
  }

  function renderAdmin(frame) {
    if (view.actions === frame.actions) return;
    // Rows are built with or without their buttons.
    view.actions = frame.actions;
    for (const row of view.rows.values()) row.tr.remove();
    view.rows.clear();
    document.body.classList.toggle('hide-actions', !frame.actions);
    $('read-only').hidden = frame.actions;
    $('token-form').hidden = !frame.actions;
    showTokenState();
  }

  // With a config file, the frame's pools (`name`, `mode`, `layer`, `discovery`); else null.
  function poolsOf(frame) {
    return Array.isArray(frame.pools) ? frame.pools : null;
  }

  function renderRows(frame, range) {
    const tbody = document.querySelector('#backends tbody');
    const pools = poolsOf(frame);
    // One section: a command line's one pool's backends; or one per pool, under its heading.
    const sections = pools === null
      ? [{ pool: null, layer: frame.layer, backends: frame.backends, discovery: frame.discovery }]
      : pools.map((pool) => ({
        pool,
        layer: pool.layer,
        backends: frame.backends.filter((backend) => backend.pool === pool.name),
        discovery: pool.discovery
      }));
    const wanted = [];
    const names = new Set();
    const groups = new Set();
    for (const section of sections) {
      if (section.pool !== null) wanted.push(poolRow(section.pool, section.backends.length));
      renderSection(section, frame, range, wanted, names, groups);
    }
    for (const [name, row] of view.rows) {
      if (!names.has(name)) {
        row.tr.remove();
        view.rows.delete(name);
      }
    }
    for (const [group, tr] of view.groups) {
      if (groups.has(group)) continue;
      tr.remove();
      view.groups.delete(group);
    }
    for (const [name, tr] of view.pools) {
      if (pools !== null && pools.some((pool) => pool.name === name)) continue;
      tr.remove();
      view.pools.delete(name);
    }
    const current = tbody.children;
    const same = current.length === wanted.length && wanted.every((tr, i) => current[i] === tr);
    if (!same) tbody.replaceChildren(...wanted);
  }

  // The rows of one pool's backends (or of a command line's one pool), added to `wanted`; the keys of the
  // rows and DNS groups shown are added to `names` and `groups`.
  function renderSection(section, frame, range, wanted, names, groups) {
    const metric = $('row-chart').value;
    const workers = typeof frame.workers === 'number' ? frame.workers : null;
    const prefix = section.pool === null ? '' : `${JSON.stringify(section.pool.name)} `;
    // Members found through DNS are shown under the name they were found
    // under, where its first member is (or at the end, while it has none).
    const discovered = new Map();
    for (const name of Array.isArray(section.discovery) ? section.discovery : []) {
      for (const member of name.members) discovered.set(member, name);
    }
    const found = new Map();
    const order = [];
    const addGroup = (name) => {
      found.set(name.name, { name, members: [] });
      order.push({ group: name.name });
    };
    for (const backend of section.backends) {
      const name = discovered.get(backend.name);
      if (name === undefined) {
        order.push(backend);
        continue;
      }
      if (!found.has(name.name)) addGroup(name);
      found.get(name.name).members.push(backend);
    }
    for (const name of Array.isArray(section.discovery) ? section.discovery : []) if (!found.has(name.name)) addGroup(name);
    for (const entry of order) {
      const group = entry.group === undefined ? null : found.get(entry.group);
      const members = group === null ? [entry] : group.members;
      if (group !== null) {
        groups.add(prefix + group.name.name);
        wanted.push(groupRow(prefix + group.name.name, group.name, members.length));
      }
      for (const backend of members) {
        const key = keyOf(backend);
        names.add(key);
        let row = view.rows.get(key);
        if (row === undefined) {
          row = createRow(backend, frame.actions);
          view.rows.set(key, row);
        }
        updateRow(row, backend, section.layer, workers);
        const series = view.backends.get(key);
        const top = draw(row.spark, series === undefined ? [] : series[metric], range, 120, 28);
        row.spark.setAttribute('class', `spark ${metric === 'errors_per_second' ? 'errors' : metric === 'p99_seconds' ? 'latency' : ''}`);
        row.spark.setAttribute('aria-label', `${metric === 'p99_seconds' ? 'p99' : metric === 'errors_per_second' ? 'errors/s' : 'requests/s'}, last 5 minutes, max ${metric === 'p99_seconds' ? duration(top) : rate(top)}`);
        wanted.push(row.tr);
      }
    }
  }

  // The heading of a pool's backends: its name, mode and layer, how many backends it has, and
  // for a --mirror pool the copies sent to it (its backends count only the requests routed there).
  function poolRow(pool, size) {
    let tr = view.pools.get(pool.name);
    if (tr === undefined) {
      tr = document.createElement('tr');
      tr.className = 'group pool';
      const th = document.createElement('th');
      th.colSpan = COLUMNS.length;
      th.append(span('', ''), span('small', ''));
      tr.append(th);
      view.pools.set(pool.name, tr);
    }
    const [title, detail] = tr.firstChild.children;
    setWrapped(title, `pool ${pool.name}`);
    setText(detail, ` · ${pool.mode} · ${pool.layer} · ${counted(size, 'backend')}${mirroredText(pool.mirrored)}`);
    return tr;
  }

  // What became of the copies --mirror meant for a pool (/status's `mirrored`), or '' for a pool without.
  function mirroredText(mirrored) {
    if (mirrored === null || typeof mirrored !== 'object') return '';
    const outcomes = [['answered', 'answered'], ['failed', 'failed'], ['timeout', 'timed out'], ['too_large', 'too large'], ['dropped', 'dropped']];
    let total = 0;
    const parts = [];
    for (const [key, word] of outcomes) {
      const count = typeof mirrored[key] === 'number' ? mirrored[key] : 0;
      total += count;
      if (count > 0) parts.push(`${count.toLocaleString('en')} ${word}`);
    }
    if (total === 0) return ' · mirror: no copies yet';
    return ` · mirror: ${total.toLocaleString('en')} ${total === 1 ? 'copy' : 'copies'} (${parts.join(', ')})`;
  }

  // The heading of the members of a DNS name: the name, its record type,
  // how many members it has, and its lookups' trouble if any.
  function groupRow(key, name, count) {
    let tr = view.groups.get(key);
    if (tr === undefined) {
      tr = document.createElement('tr');
      tr.className = 'group';
      const th = document.createElement('th');
      th.colSpan = COLUMNS.length;
      th.append(span('', ''), span('small', ''), span('error-text', ''));
      tr.append(th);
      view.groups.set(key, tr);
    }
    const [title, detail, trouble] = tr.firstChild.children;
    setWrapped(title, name.name);
    setText(detail, ` · ${name.type} · ${count} member${count === 1 ? '' : 's'}${name.state === 'resolved' ? '' : ` · ${name.state}`}`);
    setWrapped(trouble, name.last_error === null || name.last_error === undefined ? '' : ` · ${name.last_error}`);
    return tr;
  }

  function createRow(backend, actions) {
    const tr = document.createElement('tr');
    const cells = {};
    for (const [key, label] of COLUMNS) {
      const td = document.createElement('td');
      td.dataset.label = label;
      td.className = key === 'actions' ? 'actions-cell' : `col-${key}`;
      // One box per cell: the label beside it on a phone, a minimum width on a laptop.
      cells[key] = div('cell');
      td.append(cells[key]);
      tr.append(td);
    }
    const row = {
      tr,
      name: div('name'),
      address: div('address'),
      state: span('state', ''),
      reason: div('reason'),
      since: div('since'),
      weight: document.createTextNode(''),
      active: document.createTextNode(''),
      rate: div(''),
      requests: div('small'),
      errors: div(''),
      errorShare: div('small'),
      latency: document.createTextNode(''),
      lastError: span('error-text', ''),
      check: div(''),
      checkedAt: div('small'),
      spark: document.createElementNS(SVG, 'svg'),
      toggle: null,
      weightInput: null
    };
    cells.backend.append(row.name, row.address);
    cells.state.append(row.state, row.reason, row.since);
    cells.weight.append(row.weight);
    cells.active.append(row.active);
    cells.rate.append(row.rate, row.requests);
    cells.errors.append(row.errors, row.errorShare);
    cells.latency.append(row.latency);
    cells.lastError.append(row.lastError);
    cells.check.append(row.check, row.checkedAt);
    row.figures = [cells.rate, cells.errors, cells.latency];
    row.spark.setAttribute('viewBox', '0 0 120 28');
    row.spark.setAttribute('preserveAspectRatio', 'none');
    row.spark.setAttribute('role', 'img');
    cells.chart.append(row.spark);
    if (actions) addActions(row, cells.actions, backend);
    return row;
  }

  function addActions(row, cell, backend) {
    // With a config file, the backend is addressed in its pool, and named with it.
    const inPool = backend.pool === undefined ? '' : `/pools/${encodeURIComponent(backend.pool)}`;
    const path = `${inPool}/backends/${encodeURIComponent(backend.name)}`;
    const name = backend.pool === undefined ? backend.name : `${backend.name} (pool ${backend.pool})`;
    row.toggle = document.createElement('button');
    row.toggle.type = 'button';
    row.toggle.addEventListener('click', () => {
      const enable = row.toggle.dataset.action === 'enable';
      act(`${enable ? 'enable' : 'drain'} ${name}`, 'POST', `${path}/${enable ? 'enable' : 'drain'}`);
    });
    const form = document.createElement('form');
    form.className = 'weight';
    row.weightInput = document.createElement('input');
    row.weightInput.type = 'number';
    row.weightInput.min = '0';
    row.weightInput.max = '1000';
    row.weightInput.step = '1';
    row.weightInput.required = true;
    row.weightInput.setAttribute('aria-label', `weight of ${name}`);
    const set = document.createElement('button');
    set.type = 'submit';
    set.textContent = 'set';
    set.setAttribute('aria-label', `set the weight of ${name}`);
    form.append(row.weightInput, set);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const weight = Number(row.weightInput.value);
      if (!Number.isInteger(weight) || weight < 0 || weight > 1000) {
        say(`the weight of ${name} must be an integer from 0 to 1000`, true);
        return;
      }
      act(`set the weight of ${name} to ${weight}`, 'PATCH', path, { weight }).then((done) => {
        if (done) row.weightInput.value = '';
      });
    });
    cell.append(row.toggle, form);
  }

  function updateRow(row, backend, layer, workers) {
    const [kind, word] = stateOf(backend);
    row.tr.className = kind === 'down' ? 'down' : '';
    setWrapped(row.name, backend.name);
    setWrapped(row.address, backend.address === backend.name ? '' : backend.address);
    row.state.className = `state state-${kind}`;
    setText(row.state, word);
    let reason = backend.reason;
    if (kind === 'draining') reason = `weight 0: no new ${layerOf(layer).counts}`;
    else if (kind === 'down' && backend.drained === true) reason += '; drained (weight 0)';
    if (workers !== null && typeof backend.up_in_workers === 'number' && backend.up_in_workers < workers) {
      reason += ` (up in ${backend.up_in_workers} of ${workers} workers)`;
    }
    setWrapped(row.reason, reason);
    setText(row.since, since(backend.since));
    const effective = backend.effective_weight !== backend.weight ? ` (now ${backend.effective_weight}, slow start)` : '';
    setText(row.weight, `${backend.weight}${effective}`);
    setText(row.active, activeText(backend));
    const total = layerOf(layer).countsRequests ? backend.requests : backend.connections;
    setText(row.requests, `${total} in all`);
    const shown = shownRates(backend, backend);
    // Since start: the counts are what is known; the second's rate comes with the stream.
    setText(row.rate, shown.from === 'start' ? '' : rate(shown.per_second));
    setText(row.errors, shown.from === 'start' ? `${shown.errors} in all` : `${rate(shown.errors_per_second)}/s`);
    setText(row.errorShare, percent(shown.error_rate));
    setText(row.latency, `${duration(shown.p50_seconds)} / ${duration(shown.p99_seconds)}`);
    const earlier = shown.from === 'last' ? `the last second seen, at ${clock(view.last.time)}`
      : shown.from === 'start' ? 'since lila started: the rates come with the first second' : '';
    for (const cell of row.figures) {
      cell.classList.toggle('earlier', earlier !== '');
      if (earlier === '') cell.removeAttribute('title');
      else cell.title = earlier;
    }
    setWrapped(row.lastError, backend.last_error === null || backend.last_error === undefined ? '–' : backend.last_error);
    // /status's own check: the page says what /status says.
    const { check } = backend;
    if (check === null || check === undefined) {
      setWrapped(row.check, 'off');
      setText(row.checkedAt, '');
    } else if (check.ok === null || check.at === null) {
      setWrapped(row.check, 'not checked yet');
      setText(row.checkedAt, '');
    } else {
      setWrapped(row.check, check.ok ? `passing (${check.good} in a row)` : `failing (${check.bad} in a row): ${check.error}`);
      setText(row.checkedAt, `checked ${ago(check.at)} ago`);
    }
    if (row.toggle !== null) {
      const enable = backend.weight === 0;
      row.toggle.dataset.action = enable ? 'enable' : 'drain';
      setText(row.toggle, enable ? 'enable' : 'drain');
      if (document.activeElement !== row.weightInput) row.weightInput.placeholder = String(backend.weight);
    }
  }

  // The state in a word and its colour: down, drained (weight 0), at its limit, backup, up.
  function stateOf(backend) {
    if (backend.state !== 'up') return ['down', 'down'];
    if (backend.drained === true || backend.weight === 0) return ['draining', 'drained'];
    const limit = limitOf(backend);
    if (backend.at_limit === true || (limit > 0 && backend.active >= limit)) return ['limit', 'at its limit'];
    if (backend.backup) return ['backup', 'backup'];
    return ['up', 'up'];
  }

  // The most a backend takes at once (maxconn=, --max-conns; `max_conns` in /status), 0 for no limit.
  function limitOf(backend) {
    const limit = backend.max_conns;
    return typeof limit === 'number' ? limit : 0;
  }

  function activeText(backend) {
    const limit = limitOf(backend);
    return limit > 0 ? `${backend.active} of ${limit}` : String(backend.active);
  }

  // Draws a series over the last five minutes, with a gap where it has none;
  // returns the top of the scale.
  function draw(svg, values, range, width, height) {
    let max = 0;
    for (const value of values) if (value !== null && value > max) max = value;
    const top = max === 0 ? 1 : max * 1.1;
    const offset = view.times.length - values.length;
    let line = '';
    let area = '';
    let start = null;
    let x = 0;
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      const time = view.times[i + offset];
      if (value === null || time === undefined || time < range.from) {
        if (start !== null) area += `L${x} ${height}L${start} ${height}Z`;
        start = null;
        continue;
      }
      x = round(((time - range.from) / (range.to - range.from)) * width);
      const y = round(height - (value / top) * (height - 2));
      const command = start === null ? 'M' : 'L';
      if (start === null) {
        start = x;
        area += `M${x} ${height}L${x} ${y}`;
      } else {
        area += `L${x} ${y}`;
      }
      line += `${command}${x} ${y}`;
    }
    if (start !== null) area += `L${x} ${height}L${start} ${height}Z`;
    const children = [];
    if (width > 200) children.push(svgElement('line', { class: 'grid', x1: 0, x2: width, y1: height / 2, y2: height / 2 }));
    children.push(svgElement('path', { class: 'area', d: area }), svgElement('path', { class: 'line', d: line }));
    svg.replaceChildren(...children);
    return max;
  }

  function chartRange() {
    const to = view.times.length === 0 ? Date.now() : view.times[view.times.length - 1];
    return { from: to - WINDOW_MS, to };
  }

  function svgElement(name, attributes) {
    const element = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
    return element;
  }

  // ---- actions ----------------------------------------------------------------------------

  // The token is kept for this tab only, and goes in a header, never in a URL.
  async function act(what, method, path, body) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token === null) {
      say(`${what}: type the admin token first`, true);
      $('token').focus();
      return false;
    }
    const headers = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
        credentials: 'omit',
        redirect: 'error',
        referrerPolicy: 'no-referrer'
      });
    } catch {
      say(`${what}: lila did not answer`, true);
      return false;
    }
    let answer = null;
    try {
      answer = await response.json();
    } catch {
      // Not JSON: the status says it.
    }
    if (response.ok) {
      say(`${what}: done`, false);
      return true;
    }
    if (response.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      showTokenState();
    }
    say(`${what}: ${answer !== null && typeof answer.error === 'string' ? answer.error : `answered ${response.status}`}`, true);
    return false;
  }

  function showTokenState() {
    setText($('token-state'), sessionStorage.getItem(TOKEN_KEY) === null
      ? 'no token yet: actions ask for it'
      : 'a token is kept for this tab until it closes');
  }

  function say(text, failed) {
    const message = $('message');
    message.classList.toggle('failed', failed);
    setText(message, text);
  }

  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = $('token');
    const token = input.value.trim();
    input.value = '';
    if (token === '') return;
    sessionStorage.setItem(TOKEN_KEY, token);
    showTokenState();
    say('token kept for this tab', false);
  });
  $('forget').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showTokenState();
    say('token forgotten', false);
  });
  $('row-chart').addEventListener('change', () => {
    if (view.frame !== null) renderRows(view.frame, chartRange());
  });

  // ---- time and numbers -------------------------------------------------------------------

  function setLive(state, text) {
    const live = $('live');
    live.dataset.live = state;
    setText(live, text);
  }

  // Once a second: the uptime goes on, and a silent stream shows.
  function tick() {
    const frame = view.frame;
    if (frame === null) return;
    const silent = Date.now() - view.receivedAt;
    setText($('uptime'), age(frame.uptime_seconds + silent / 1000));
    const live = $('live');
    if (silent > STALE_MS && live.dataset.live === 'live') setLive('lost', `no update for ${Math.round(silent / 1000)} s`);
    else if (silent <= STALE_MS && live.dataset.live === 'lost' && live.textContent.startsWith('no update')) setLive('live', 'live');
  }

  function counted(n, noun) {
    return `${n} ${noun}${n === 1 ? '' : 's'}`;
  }

  function rate(value) {
    if (value === null || value === undefined) return '–';
    if (value === 0) return '0';
    if (value < 10) return value.toFixed(1);
    return Math.round(value).toLocaleString('en');
  }

  function percent(share) {
    if (share === null || share === undefined) return '–';
    const value = share * 100;
    return `${value === 0 ? '0' : value < 10 ? value.toFixed(1) : Math.round(value)}%`;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    const ms = seconds * 1000;
    if (ms < 10) return `${ms.toFixed(1)} ms`;
    if (ms < 1000) return `${Math.round(ms)} ms`;
    return `${seconds < 10 ? seconds.toFixed(2) : seconds.toFixed(1)} s`;
  }

  function age(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }

  function ago(at) {
    return age((Date.now() - (typeof at === 'number' ? at : Date.parse(at))) / 1000);
  }

  function clock(at) {
    return new Date(at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  }

  function since(iso) {
    const at = Date.parse(iso);
    if (Number.isNaN(at)) return '';
    return `since ${clock(at)} (${ago(at)} ago)`;
  }

  function round(value) {
    return Math.round(value * 10) / 10;
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  // Names, addresses and error texts break only at spaces and after "." ":" "/" "@", never
  // inside a word (ECONNREFUSED stays whole): each piece is kept whole, a <wbr> between two.
  // The whole text is the title too, for a piece shortened on a narrow screen.
  function setWrapped(node, text) {
    if (node.dataset.text === text) return;
    node.dataset.text = text;
    if (text === '' || text === '–') node.removeAttribute('title');
    else node.title = text.trim();
    const children = [];
    for (const word of text.split(/(\s+)/)) {
      if (word === '') continue;
      if (/^\s/.test(word)) {
        children.push(document.createTextNode(word));
        continue;
      }
      word.split(/(?<=[.:/@])/).forEach((piece, i) => {
        if (i > 0) children.push(document.createElement('wbr'));
        children.push(span('piece', piece));
      });
    }
    node.replaceChildren(...children);
  }

  function div(className) {
    const element = document.createElement('div');
    if (className !== '') element.className = className;
    return element;
  }

  function span(className, text) {
    const element = document.createElement('span');
    if (className !== '') element.className = className;
    element.textContent = text;
    return element;
  }

  // The figures the page came with (lila writes them in it): shown before the first event.
  function showFigures() {
    const block = $('figures');
    if (block === null) return;
    let figures;
    try {
      figures = JSON.parse(block.textContent);
    } catch {
      return;
    }
    if (figures.history !== null && typeof figures.history === 'object') onHistory(figures.history);
    if (figures.snapshot !== null && typeof figures.snapshot === 'object') onSnapshot(figures.snapshot);
  }

  document.addEventListener('visibilitychange', () => (document.hidden ? pause() : connect()));
  setInterval(tick, 1000);
  showFigures();
  if (document.hidden) setLive('paused', 'paused while hidden');
  connect();
}

module.exports = { dashboardScript };
