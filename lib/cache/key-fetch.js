'use strict';

const Fill = require('./fill');
const Fetch = require('../http/fetch/fetch');
const LocalResponse = require('../http/lifecycle/local-response');
const { responsePolicy } = require('./policy');
const { staleOnError } = require('./reuse');
const { varyValues } = require('./keys');
const { revalidationHeaders, updateFrom304, matches304, cacheTags, answerHeaders, forClients } = require('./stored-fields');
const { surrogateCapability } = require('./surrogate-control');
const { currentAge, freshnessLifetime } = require('./freshness');
const { cacheStatus } = require('./cache-status');
const { storedAnswer } = require('./stored-answer');
const { LilaError } = require('../errors');

// What a fetch of lila's own never sends: the client's conditions and ranges are the store's to answer.
const CLIENT_CONDITIONS = new Set(['if-none-match', 'if-modified-since', 'if-match', 'if-unmodified-since', 'if-range', 'range']);
// A client whose own request asks for a part or a condition waits for the whole answer, then is answered from it.
const ANSWERED_WHOLE = ['range', 'if-none-match', 'if-modified-since', 'if-match', 'if-unmodified-since'];

/**
 * One fetch of a cache key from the route's pool, and the clients waiting
 * for it (collapsed misses): the first request's head sent as lila's own
 * request (`Fetch`), a GET for a HEAD too, without the client's conditions,
 * with the stored answer's validators when one is revalidated. Its head
 * decides: a 304 refreshes the stored answer, which every waiter gets; a
 * failure or a 5xx gives a stale answer where RFC 5861 allows it; anything
 * else is streamed to every waiter as it arrives (`Fill`), and stored once
 * whole if RFC 9111 allows it. A waiter whose variant the answer's Vary
 * does not cover, or that the answer may not serve (not storable: it was
 * for the first one alone), goes to the pool on its own; so does one that
 * waits past --cache-lock-timeout. A client that goes away stops none of it.
 */
class KeyFetch {
  /**
   * A request joins the fetch in flight of its key, or starts one.
   *
   * @param {import('./route-cache')} routeCache
   * @param {import('../http/lifecycle/passage')} passage
   * @param {string} key
   * @param {object | null} stale the stored answer being revalidated, null on a miss
   * @param {string} fwd Cache-Status's fwd for this request
   * @returns {Promise<LocalResponse | object | null>}
   */
  static join(routeCache, passage, key, stale, fwd) {
    const fetches = routeCache.cache.fetches;
    // A request with credentials has its own fetch: its answer may be for it alone.
    const shared = passage.request.headers.authorization === undefined;
    let fetch = shared ? fetches.get(key) : undefined;
    const collapsed = fetch !== undefined && fetch.fill.error === null;
    if (!collapsed) {
      fetch = new KeyFetch(routeCache, passage, key, stale, shared);
      if (shared) fetches.set(key, fetch);
    }
    return fetch.wait(routeCache, passage, fwd, collapsed);
  }

  /**
   * stale-while-revalidate: a stale answer was given, its key is fetched again in the background (once).
   *
   * @param {import('./route-cache')} routeCache
   * @param {import('../http/lifecycle/passage')} passage the request that found it stale
   * @param {string} key
   * @param {object} entry
   */
  static revalidate(routeCache, passage, key, entry) {
    const fetches = routeCache.cache.fetches;
    if (fetches.has(key)) return;
    const fetch = new KeyFetch(routeCache, passage, key, entry, true);
    fetches.set(key, fetch);
    fetch.lead = false;
  }

  constructor(routeCache, passage, key, stale, shared) {
    this.routeCache = routeCache;
    this.cache = routeCache.cache;
    this.key = key;
    this.stale = stale;
    this.shared = shared;
    // The request whose head is sent, and whose variant the answer is stored as.
    this.request = passage.request;
    /** @type {Set<Waiter>} */
    this.waiters = new Set();
    this.policy = null;
    // Whether the first waiter is the request it was made for (not a background revalidation).
    this.lead = true;
    // Waiters whose answer is made from the whole body (their ranges, their conditions), and its Cache-Status.
    this.whole = [];
    this.fill = new Fill({
      maxObject: this.cache.maxObject,
      head: () => this.headCame(),
      done: () => this.bodyCame(),
      failed: (fill, error) => this.failed(error),
      unread: () => this.unread(),
      hints: (head) => this.hints(head)
    });
    this.fill.start(new Fetch(passage.engine, this.fetchHead(passage), passage.route, passage.binding,
      { clientAddress: passage.clientAddress, scheme: passage.scheme, client: passage.clientSocket }, this.fill));
  }

  // The head lila sends: the request as its backend gets it, as a GET, with the stored validators
  // and lila's Surrogate-Capability.
  fetchHead(passage) {
    const head = passage.outgoingHead();
    const rawHeaders = [];
    let capability;
    for (let i = 0; i < head.headers.length; i += 2) {
      const name = head.headers[i].toLowerCase();
      if (name === 'surrogate-capability') capability = capability === undefined ? head.headers[i + 1] : `${capability}, ${head.headers[i + 1]}`;
      else if (!CLIENT_CONDITIONS.has(name) && name !== 'content-length' && name !== 'transfer-encoding') rawHeaders.push(head.headers[i], head.headers[i + 1]);
    }
    rawHeaders.push('Surrogate-Capability', surrogateCapability(capability));
    if (this.stale !== null) rawHeaders.push(...revalidationHeaders(this.stale.headers));
    return { method: 'GET', url: head.target, headers: { host: head.host }, rawHeaders };
  }

  /**
   * A request waits for the answer (at most --cache-lock-timeout for its head, when another's fetch is in flight).
   *
   * @returns {Promise<LocalResponse | object | null>}
   */
  wait(routeCache, passage, fwd, collapsed) {
    return new Promise((resolve) => {
      const waiter = { routeCache, passage, fwd, collapsed, resolve, timer: null };
      if (this.fill.status !== 0 && this.policy !== null) {
        this.answer(waiter);
        return;
      }
      this.waiters.add(waiter);
      if (collapsed && this.cache.lockTimeout > 0) {
        waiter.timer = setTimeout(() => this.alone(waiter), this.cache.lockTimeout);
      }
    });
  }

  // Waited past the lock's timeout: to the pool on its own.
  alone(waiter) {
    if (!this.waiters.delete(waiter)) return;
    waiter.routeCache.counted(waiter.passage, 'miss');
    waiter.resolve(null);
  }

  headCame() {
    const fill = this.fill;
    const now = fill.responseTime;
    const stale = this.stale;
    if (stale !== null && fill.status === 304) {
      this.refreshed(now);
      return;
    }
    if (stale !== null && fill.status >= 500 && this.staleAllowed(now)) {
      this.answerStale(fill.status);
      this.done(true);
      return;
    }
    // The answer is to the GET lila sent, whatever its first client asked (a HEAD is answered from a GET).
    this.policy = responsePolicy({ method: 'GET', headers: this.request.headers }, { status: fill.status, headers: fill.headers },
      { now, requestTime: fill.requestTime, staleIfError: this.cache.staleIfError });
    for (const waiter of this.waiters) this.answer(waiter);
    this.waiters.clear();
    // Past the head, a new request for the key finds a store answer or fetches anew once this is whole.
    if (!this.policy.store) this.forget();
  }

  // A waiter's answer from the fetch's head: streamed from it, or (ranges, conditions) once whole; or its own way.
  answer(waiter) {
    clearTimeout(waiter.timer);
    const { passage } = waiter;
    const first = this.lead && waiter === this.first;
    if (!first && (!this.policy.store || !this.sameVariant(passage.request))) {
      waiter.routeCache.counted(passage, 'miss');
      waiter.resolve(null);
      return;
    }
    waiter.routeCache.counted(passage, this.stale === null ? 'miss' : 'revalidated');
    passage.fetchedFrom = this.fill.fetch.servedBy;
    const status = cacheStatus({ fwd: waiter.fwd, fwdStatus: this.fill.status, stored: this.policy.store, collapsed: waiter.collapsed });
    if (ANSWERED_WHOLE.some((name) => passage.request.headers[name] !== undefined) && this.policy.store) {
      this.whole.push({ waiter, status });
      return;
    }
    waiter.resolve(this.streamed(passage.request, status));
  }

  get first() {
    return this.waiters.values().next().value;
  }

  // The fetch's answer as it comes, for one client.
  streamed(request, status) {
    const fill = this.fill;
    const headers = [];
    let length = -1;
    for (let i = 0; i < fill.headers.length; i += 2) {
      const name = fill.headers[i].toLowerCase();
      if (!forClients(name)) continue;
      if (name === 'content-length') length = Number(fill.headers[i + 1]);
      headers.push(fill.headers[i], fill.headers[i + 1]);
    }
    headers.push('Cache-Status', status);
    const bodiless = request.method === 'HEAD' || fill.status === 204 || fill.status === 304;
    const body = bodiless ? null : fill.reader();
    // Its start is gone (a long answer read past its window): this client goes on its own.
    if (!bodiless && body === null) return null;
    return new LocalResponse(fill.status, headers, body, bodiless ? 0 : length);
  }

  bodyCame() {
    const fill = this.fill;
    const body = fill.wholeBody();
    const entry = this.policy !== null && this.policy.store && body !== null ? this.entryOf(body) : null;
    if (entry !== null) this.cache.put(entry);
    for (const { waiter, status } of this.whole) {
      waiter.resolve(entry === null ? this.streamed(waiter.passage.request, status) : storedAnswer(entry, waiter.passage.request, 0, status));
    }
    this.whole = [];
    this.done(false);
  }

  // The answer as it is stored.
  entryOf(body) {
    const { fill, policy } = this;
    return {
      key: this.key,
      method: 'GET',
      varyNames: policy.varyNames,
      varyValues: varyValues(policy.varyNames, this.request.headers),
      status: fill.status,
      headers: policy.headers,
      body,
      requestTime: fill.requestTime,
      responseTime: fill.responseTime,
      tags: policy.tags
    };
  }

  // A 304 for the stored answer: refreshed, stored again, and every waiter answered from it.
  refreshed(now) {
    const stale = this.stale;
    const fill = this.fill;
    if (!matches304(stale.headers, fill.headers)) {
      // A 304 that is not for what is stored: each waiter goes on its own.
      for (const waiter of this.waiters) this.alone(waiter);
      this.done(true);
      return;
    }
    const tags = cacheTags(fill.headers);
    const entry = { ...stale, headers: updateFrom304(stale.headers, fill.headers, now), requestTime: fill.requestTime, responseTime: now,
      tags: tags.length > 0 ? tags : stale.tags };
    this.cache.put(entry);
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.routeCache.counted(waiter.passage, 'revalidated');
      waiter.passage.fetchedFrom = this.fill.fetch.servedBy;
      const status = cacheStatus({ fwd: waiter.fwd, fwdStatus: 304, collapsed: waiter.collapsed });
      waiter.resolve(storedAnswer(entry, waiter.passage.request, currentAge(entry, Date.now()), status));
    }
    this.waiters.clear();
    this.done(true);
  }

  // The fetch failed: the stale answer where RFC 5861 allows it, else lila's own answer of the failure,
  // with its Cache-Status (no fwd-status: the backend gave none).
  failed(error) {
    if (this.stale !== null && this.staleAllowed(Date.now())) this.answerStale(error.status);
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.routeCache.counted(waiter.passage, 'miss');
      waiter.resolve(withCacheStatus(error, cacheStatus({ fwd: waiter.fwd, collapsed: waiter.collapsed })));
    }
    this.waiters.clear();
    for (const { waiter } of this.whole) waiter.resolve(withCacheStatus(error, cacheStatus({ fwd: waiter.fwd, collapsed: waiter.collapsed })));
    this.whole = [];
    this.done(false);
  }

  // An interim head (103 Early Hints, 102) goes to the clients waiting for the final one (never stored: RFC 9111 §3).
  hints(head) {
    for (const { passage } of this.waiters) if (!passage.done && !passage.gone()) passage.inform(head);
  }

  // Past --cache-max-object with every client gone: nobody takes the rest, nor the store; it stops. A client
  // waiting for the whole answer (its range, its conditions) goes on its own, as it would at its end.
  unread() {
    for (const { waiter } of this.whole) waiter.resolve(null);
    this.whole = [];
    this.done(true);
  }

  staleAllowed(now) {
    return staleOnError(this.stale, this.request, now, { staleIfError: this.cache.staleIfError });
  }

  // Every waiter gets the stale answer in place of the backend's failure (its ttl negative: RFC 9211 §2.5).
  answerStale(status) {
    const entry = this.stale;
    const now = Date.now();
    const age = currentAge(entry, now);
    const ttl = freshnessLifetime(entry) - age;
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.routeCache.counted(waiter.passage, 'stale');
      const value = cacheStatus({ fwd: 'stale', fwdStatus: status, collapsed: waiter.collapsed, ttl, detail: 'stale-if-error' });
      waiter.resolve(storedAnswer({ ...entry, headers: answerHeaders(entry, now) }, waiter.passage.request, age, value));
    }
    this.waiters.clear();
  }

  sameVariant(request) {
    const names = this.policy.varyNames;
    return names.length === 0 || varyValues(names, request.headers) === varyValues(names, this.request.headers);
  }

  // No longer the key's fetch that new requests join.
  forget() {
    if (this.cache.fetches.get(this.key) === this) this.cache.fetches.delete(this.key);
  }

  // Over: forgotten, and its fetch stopped when nothing reads it any more.
  done(stop) {
    this.forget();
    if (stop) this.fill.abandon();
  }
}

module.exports = KeyFetch;

// lila's answer of a failure (a LilaError, which the engine answers), for one client: with its Cache-Status.
function withCacheStatus(error, status) {
  const answer = new LilaError(error.code, error.message, error.status);
  answer.fields = [...error.fields ?? [], 'Cache-Status', status];
  return answer;
}
