'use strict';

const { readCookie } = require('../sticky-cookie');
const { refusalBeforeForwarding } = require('../limits');
const { noRoute } = require('../route-request');
const { CLIENT_LEFT } = require('../outcomes');
const { answerOf, openObservers } = require('./observers');
const RequestView = require('../../actions/request-view');
const { RequestIds, withTraceparent } = require('../../actions/request-id');
const { clientCertificateOf } = require('../../net/client-certificate');
const { LilaError, codes } = require('../../errors');
const BackendSlot = require('./backend-slot');
const RequestTrace = require('./request-trace');
const { FilterChain } = require('./filter-chain');

/**
 * One http request's way through lila, the same on every engine (the fast
 * engine's HTTP/1.1 requests and h2 streams, core http's requests, and
 * upgrades), in this order:
 *
 * 1. `start(contentLength)`: the limits (429, 413), the 404 of no route,
 *    then its route's actions (an answer or a refusal before any pool; maybe
 *    a promise, `--forward-auth`, a shared rate limit);
 * 2. `forward()`: its route's features may answer it (a file), else observe
 *    it (observers.js) while it takes a backend slot: acquired at once or
 *    after a wait in the balancer's queue (else lila's own answer), then
 *    `use(backend)`; a failed connect goes to the next backend.
 * 3. `settle(status)`: over (answered, cut short, or its client left): out
 *    of the queue, its slot given back once, its observers told, and the
 *    one record `Traffic#request` counts and logs.
 *
 * The engines extend it with wire code only: reading the client, writing
 * to it, sending to a backend. They provide `host`, `scheme`, `clientSocket`
 * (the request's Host as received, the client's scheme and connection),
 * `attempt()` (send it to `this.backend`), `answerLocally(local)` (relay a
 * feature's own answer as a backend's), `fail(error, detail)` (lila's own
 * answer, or the response cut short once begun) and `outgoingHead()` (the
 * request as its backend gets it, for observers).
 *
 * It is also a strategy's pick context and, once over, `Traffic#request`'s record.
 */
class Passage extends BackendSlot {
  /**
   * @param {{settings: object, traffic: object, logger: object}} engine its listener's
   * @param {{method: string, url: string, headers: object, rawHeaders: string[]}} request
   * @param {import('../route-request').Route | null} route null: none matched (answered 404)
   * @param {import('../../pool-binding')} binding the pool the route chose
   * @param {string | undefined} clientAddress after --accept-proxy
   */
  constructor(engine, request, route, binding, clientAddress) {
    super();
    this.engine = engine;
    this.request = request;
    this.route = route;
    /** Its route's actions (route options); null: none. */
    this.actions = route === null ? null : route.actions;
    this.binding = binding;
    this.clientAddress = clientAddress;
    // --request-id or traces: its X-Request-ID and trace context (null with neither); its spans, when its trace is recorded.
    const tracer = engine.settings.tracer ?? null;
    const requestId = engine.settings.requestId === true;
    this.ids = requestId || tracer !== null ? RequestIds.of(request.rawHeaders, requestId, tracer) : null;
    this.trace = tracer !== null && this.ids.sampled ? new RequestTrace(tracer, this.ids, this.servesClient, request.rawHeaders) : null;
    /** @type {string | null} its X-Request-ID (--request-id), null without */
    this.requestId = this.ids === null ? null : this.ids.requestId;
    // What the route's actions read of the request, made for routes that have actions.
    this.view = null;
    // The backends that failed it, the one it holds a slot of, and the last one it went to.
    this.tried = null;
    this.backend = null;
    this.servedBy = null;
    // In the queue for a backend slot (balancer.wait).
    this.waiting = false;
    this.startedAt = binding.balancer.now();
    this.sentAt = 0;
    // What the client's sticky cookie says (--sticky), for the balancer's pick.
    const cookie = binding.settings.stickyCookie;
    this.stickyId = cookie === null ? null : readCookie(request.rawHeaders, cookie);
    // Its route's features' observers, once it goes to its pool (null: none); a body filter one of them put on its response.
    this.observers = null;
    // What a feature changed of it and its answer (request-edits.js), and what --hook keeps for it (its ctx); null: none.
    this.edits = null;
    this.hookContext = null;
    // What a feature answered it with (a LocalResponse) or null; for its access line, what the cache did, its fetch's backend.
    this.local = null;
    this.cacheResult = null;
    this.fetchedFrom = null;
    this.filter = null;
    // Response body bytes the client was sent (nginx's $body_bytes_sent).
    this.bytesSent = 0;
    // Over: answered, cut, or its client left; later events change nothing.
    this.done = false;
    // Its record, once over: the status the client got (499: it left before any) and the ms it took.
    this.answered = 0;
    this.elapsed = 0;
  }

  /** @returns {boolean} a client's request (its SERVER span is recorded); a fetch for no client is not */
  get servesClient() {
    return true;
  }

  /** @returns {string} the request target its backend gets (the route's path edits applied) */
  get target() {
    if (this.edits !== null && this.edits.target !== null) return this.edits.target;
    const actions = this.actions;
    return actions === null ? this.request.url : actions.target(this.request.url);
  }

  /**
   * The header list its backend gets in this attempt: a traced attempt's traceparent names its own CLIENT span.
   *
   * @param {string[]} headers `[name, value, ...]` made for the request (withRequestIds)
   * @returns {string[]}
   */
  attemptHeaders(headers) {
    return this.trace === null ? headers : withTraceparent(headers, this.ids.traceparent);
  }

  /**
   * Sends it to another pool than its route chose (a hook's `ctx.pool`), before any backend is taken.
   *
   * @param {import('../../pool-binding')} binding
   */
  rebind(binding) {
    this.binding = binding;
    const cookie = binding.settings.stickyCookie;
    this.stickyId = cookie === null ? null : readCookie(this.request.rawHeaders, cookie);
  }

  /** @returns {import('../../pool-binding').BoundPool | null} the pool its route chose, null: none */
  get pool() {
    return this.binding.pool;
  }

  /**
   * Step 1: what the limits answer (429, 413), at once or once a store decides, then `beforePool`.
   *
   * @param {number} contentLength its announced body length, against --max-body-size (-1: none)
   */
  start(contentLength) {
    this.beforePool(refusalBeforeForwarding(this.engine.settings, this.clientAddress, contentLength, this.request, this.route));
  }

  /**
   * A request no route matched gets its 404; else its route's actions may
   * answer it (an `Answer`: a redirect, `--respond`, a CORS preflight) or
   * refuse it (a `LilaError`), at once or once a question asked elsewhere is
   * answered (`--forward-auth`). Then `proceed`.
   *
   * @param {object | null | Promise<object | null>} refusal what the limits answer, or will
   */
  beforePool(refusal) {
    // A rate limit counted with a store decides once it answers (or by its deadline).
    if (refusal !== null && typeof refusal.then === 'function') {
      refusal.then((result) => {
        if (!this.gone()) this.beforePool(result);
      });
      return;
    }
    if (refusal === null && this.route === null) refusal = noRoute(this.host, this.request.url);
    const actions = refusal === null ? this.actions : null;
    if (actions === null) {
      this.proceed(refusal);
      return;
    }
    const answer = actions.answer(this.requestView());
    if (answer === null || typeof answer.then !== 'function') {
      this.proceed(answer);
      return;
    }
    // The client may leave meanwhile: it is over, and nothing goes on.
    answer.then(
      (result) => {
        if (!this.gone()) this.proceed(result);
      },
      (err) => {
        if (!this.gone()) this.proceed(err);
      }
    );
  }

  /** @returns {boolean} it is over: its client left, or it was answered */
  gone() {
    return this.done;
  }

  /**
   * What `beforePool` decided: null sends it to its pool; an answer or a refusal is sent instead.
   *
   * @param {object | null} refusal
   */
  proceed(refusal) {
    if (refusal === null) this.forward();
    else this.refuse(refusal);
  }

  /**
   * lila answers it before its pool (a limit, a route's answer or refusal, the 404 of no route).
   *
   * @param {object} refusal
   */
  refuse(refusal) {
    this.fail(refusal, `client ${this.clientAddress}`);
  }

  /**
   * Step 2: its route's features may answer it themselves (a file), else
   * observe it from now on; then it takes a backend slot, or gets the local answer.
   */
  forward() {
    const features = this.route.features;
    if (features === null) {
      this.takeBackend();
      return;
    }
    const answer = answerOf(features, this);
    if (answer === null || typeof answer.then !== 'function') {
      this.answerWith(answer);
      return;
    }
    answer.then(
      (result) => {
        if (!this.gone()) this.answerWith(result);
        // Its client left meanwhile: an answer made for it is let go (a file closed, a fetch's reader).
        else if (result !== null && typeof result.destroy === 'function') result.destroy();
      },
      (err) => {
        if (err instanceof LilaError) {
          if (!this.gone()) this.answerWith(err);
          return;
        }
        this.engine.logger.error(`route "${this.route.text}": ${err.stack || err.message}`);
        if (!this.gone()) this.answerWith(new LilaError(codes.RESOURCES, 'the answer could not be made', 500));
      }
    );
  }

  /** Goes on with what the features answered: a `LocalResponse`, a `LilaError`, or null (to its pool). */
  answerWith(answer) {
    // An answer whose body failed before it could be relayed (its fetch cut short) is lila's 502.
    if (answer !== null && answer.destroyed === true) answer = new LilaError(codes.UPSTREAM, 'the backend failed mid-response', 502);
    if (answer instanceof LilaError) {
      this.refuse(answer);
      return;
    }
    this.local = answer;
    this.openObservers();
    if (answer === null) this.takeBackend();
    else this.answerLocally(answer);
  }

  /** Its route's features' observers of it (the lifecycle's `forwarded` point); an engine adds what they must see already. */
  openObservers() {
    this.observers = openObservers(this.route.features, this);
  }

  /** @returns {RequestView} the request as its route's actions read it */
  requestView() {
    this.view ??= new RequestView(this.request, this.host, this.scheme, this.clientAddress,
      this.requestId, clientCertificateOf(this.clientSocket));
    return this.view;
  }

  /**
   * A piece of the request body, as the engine has it, for the observers.
   *
   * @param {Buffer} chunk
   */
  observeBody(chunk) {
    const observers = this.observers;
    for (let i = 0; i < observers.length; i++) if (observers[i].requestBody !== undefined) observers[i].requestBody(chunk);
  }

  /** The request body is whole (or there is none), for the observers. */
  observeBodyEnd() {
    const observers = this.observers;
    for (let i = 0; i < observers.length; i++) if (observers[i].requestEnded !== undefined) observers[i].requestEnded();
  }

  /**
   * The response head, as the observers change it: innermost first, so that
   * the outermost feature has the last word. An observer may take its time
   * (a hook's async `onResponse`: a promise) or refuse the answer (a
   * `LilaError`: lila's own answer goes out instead; nothing was sent yet).
   *
   * @param {number} status
   * @param {string[]} headers `[name, value, ...]` as the client would get them
   * @param {boolean} bodiless the response has no body (HEAD, 204, 304)
   * @param {number} [from] the observer to ask first (the others after an async one)
   * @returns {string[] | LilaError | Promise<string[] | LilaError>} the fields the client gets; an observer may
   *   have put a body filter on (`this.filter`), or changed the status (`this.edits.status`)
   */
  observeResponseHead(status, headers, bodiless, from = this.observers.length - 1) {
    const observers = this.observers;
    for (let i = from; i >= 0; i--) {
      if (observers[i].responseHead === undefined) continue;
      const sent = this.edits === null || this.edits.status === 0 ? status : this.edits.status;
      headers = observers[i].responseHead(this, sent, headers, bodiless);
      if (Array.isArray(headers)) continue;
      if (headers instanceof LilaError) return headers;
      return headers.then((later) => (Array.isArray(later) && i > 0 && !this.done ? this.observeResponseHead(status, later, bodiless, i - 1) : later));
    }
    return headers;
  }

  /** @param {import('./observers').BodyFilter} filter the response body goes through it, what it gives to the client */
  filterBody(filter) {
    // A filter put on after another (--compress after a hook's transform) takes what the first gives.
    this.filter = this.filter === null ? filter : new FilterChain(this.filter, filter, this);
  }

  /**
   * Step 3: it is over (answered, cut short, or its client left): out of the
   * queue, its slot and body filter let go, and recorded. Once.
   *
   * @param {number} status what the client got; 0: nothing (it left first, counted 499)
   */
  settle(status) {
    this.leaveQueue();
    this.release();
    if (this.filter !== null) {
      this.filter.destroy();
      this.filter = null;
    }
    this.record(status);
  }

  /**
   * Its observers are told it is over, and `Traffic` counts and logs it.
   *
   * @param {number} status what the client got; 0: nothing (counted 499)
   */
  record(status) {
    this.answered = status === 0 ? CLIENT_LEFT : status;
    this.elapsed = this.binding.balancer.now() - this.startedAt;
    const observers = this.observers;
    if (observers !== null) for (let i = 0; i < observers.length; i++) if (observers[i].finished !== undefined) observers[i].finished(this);
    if (this.trace !== null) this.trace.finish(this);
    this.engine.traffic.request(this);
  }
}

module.exports = Passage;

