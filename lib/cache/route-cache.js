'use strict';

const { requestPolicy, servable } = require('./reuse');
const { cacheKey, selectVariant, invalidated } = require('./keys');
const { cacheStatus } = require('./cache-status');
const { storedAnswer } = require('./stored-answer');
const { forClients } = require('./stored-fields');
const KeyFetch = require('./key-fetch');
const LocalResponse = require('../http/lifecycle/local-response');

// What a route's cache counts, for lila_cache_requests_total{route,result}.
const RESULTS = ['hit', 'miss', 'stale', 'revalidated', 'bypass'];

/**
 * `--cache` on a route: a feature of the request lifecycle
 * (http/lifecycle/observers.js) that answers what RFC 9111 lets a shared
 * cache answer from the store (`answer`), fetches what it must from the
 * route's pool itself, once per key however many clients ask at once
 * (key-fetch.js), and observes what goes to the pool past it (`open`): the
 * `Cache-Status` of a request it let by, and the stored answers an unsafe
 * request invalidates.
 */
class RouteCache {
  /**
   * @param {boolean | undefined} enabled the route's --cache
   * @param {import('./cache') | null} cache the process's
   * @param {string} text the route, for its counts
   * @returns {RouteCache | null}
   */
  static from(enabled, cache, text) {
    if (enabled !== true || cache === null) return null;
    return new RouteCache(cache, text);
  }

  constructor(cache, text) {
    this.cache = cache;
    this.text = text;
    /** Requests by result: what was answered from the store, fetched, answered stale, revalidated, let by. */
    this.counts = Object.fromEntries(RESULTS.map((result) => [result, 0]));
  }

  /**
   * The lifecycle's `answer` point: a stored answer, or one fetched for this
   * request (and the others that wait for its key), or null to let it go to
   * the pool as it is (an unsafe method, `no-store`...).
   *
   * @param {import('../http/lifecycle/passage')} passage
   * @returns {LocalResponse | object | null | Promise<LocalResponse | object | null>}
   */
  answer(passage) {
    const request = passage.request;
    const asked = requestPolicy(request);
    if (!asked.lookup) {
      passage.cacheResult = 'bypass';
      this.counts.bypass++;
      return null;
    }
    const key = cacheKey(passage.scheme, passage.host === undefined ? '' : passage.host, keyTarget(passage));
    const store = this.cache.store;
    // Memory alone is answered at once; with --cache-dir, memory's answer is awaited as disk's is.
    if (store.disk === null) return this.decide(passage, key, asked, store.memory.get(key));
    return store.get(key).then((variants) => this.decide(passage, key, asked, variants));
  }

  // What the stored variants of the key can do for this request.
  decide(passage, key, asked, variants) {
    const request = passage.request;
    const now = Date.now();
    const entry = variants.length === 0 ? null : selectVariant(variants, request.headers);
    if (entry !== null) {
      const verdict = servable(entry, request, now, { staleIfError: this.cache.staleIfError, requestPolicy: asked });
      if (verdict.action === 'hit' || verdict.action === 'stale') {
        this.counted(passage, verdict.action === 'hit' ? 'hit' : 'stale');
        if (verdict.background) KeyFetch.revalidate(this, passage, key, entry);
        return storedAnswer(entry, request, verdict.age, cacheStatus({ hit: true, ttl: verdict.ttl }));
      }
      if (verdict.action === 'gateway-timeout') return onlyIfCached(this, passage);
      return KeyFetch.join(this, passage, key, entry, verdict.fwd === 'request' ? 'request' : 'stale');
    }
    if (asked.onlyIfCached) return onlyIfCached(this, passage);
    return KeyFetch.join(this, passage, key, null, variants.length === 0 ? 'uri-miss' : 'vary-miss');
  }

  /**
   * The lifecycle's `forwarded` point: for what goes to the pool past the
   * cache, its `Cache-Status`; for an unsafe request, what it invalidates.
   *
   * @param {import('../http/lifecycle/passage')} passage
   * @returns {RouteCache | null}
   */
  open(passage) {
    return passage.local === null ? this : null;
  }

  /** The response of a request let by: its Cache-Status; an unsafe one's success invalidates its URI (RFC 9111 §4.4). */
  responseHead(passage, status, headers) {
    const request = passage.request;
    if (status < 400 && request.method !== 'GET' && request.method !== 'HEAD') {
      const key = cacheKey(passage.scheme, passage.host === undefined ? '' : passage.host, keyTarget(passage));
      for (const stale of invalidated(request, { status, headers }, key)) this.cache.delete(stale);
    }
    // GET and HEAD are always looked up: one here went on its own (past the lock, not shared).
    const fwd = passage.cacheResult === 'bypass' ? 'method' : 'miss';
    const kept = [];
    for (let i = 0; i < headers.length; i += 2) if (forClients(headers[i].toLowerCase())) kept.push(headers[i], headers[i + 1]);
    kept.push('Cache-Status', cacheStatus({ fwd, fwdStatus: status }));
    return kept;
  }

  /** @returns {object} /status's: its requests by result, and the share answered from the store */
  describe() {
    const { hit, miss, stale, revalidated, bypass } = this.counts;
    const looked = hit + miss + stale + revalidated;
    return { ...this.counts, hit_ratio: looked === 0 ? null : Math.round(((hit + stale) / looked) * 1000) / 1000 };
  }

  /**
   * Counts a request's result, and says it in its access line.
   *
   * @param {import('../http/lifecycle/passage')} passage
   * @param {string} result one of RESULTS
   */
  counted(passage, result) {
    passage.cacheResult = result;
    this.counts[result]++;
  }
}

module.exports = RouteCache;
module.exports.RESULTS = RESULTS;

// only-if-cached, and nothing the request accepts: 504 (RFC 9111 §5.2.1.7).
function onlyIfCached(routeCache, passage) {
  routeCache.counted(passage, 'miss');
  const headers = ['Cache-Status', cacheStatus({ fwd: 'miss', detail: 'only-if-cached' }), 'Content-Length', '0'];
  return new LocalResponse(504, headers, null, 0);
}

// The target a request is stored under: as the client asked, or as a hook changed it (--hook's req.path).
function keyTarget(passage) {
  return passage.edits !== null && passage.edits.target !== null ? passage.edits.target : passage.request.url;
}
