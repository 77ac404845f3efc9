'use strict';

const { performance } = require('node:perf_hooks');
const HookRequest = require('./hook-request');
const HookResponse = require('./hook-response');
const HookContext = require('./hook-context');
const { hookAnswer } = require('./hook-answer');
const { TransformFilter } = require('./transform-filter');
const { RequestEdits } = require('../http/lifecycle/request-edits');
const { withoutField } = require('../http/headers');
const { LilaError, codes } = require('../errors');

const TIMED_OUT = Symbol('timed out');

/**
 * A route's `--hook` as a feature on the request lifecycle
 * (lib/http/lifecycle/observers.js), between `--compress` (outside: it
 * compresses what the hook made) and `--mirror`, `--root` and `--cache`
 * (inside: they see the request as the hook changed it, and the hook sees
 * their answers):
 * - `answer(passage)`: `onRequest(req, ctx)` changes the request (its
 *   target, fields, pool) or answers it;
 * - `open(passage)`: an observer of the answer's head, whose
 *   `onResponse(res, ctx)` changes its status and fields and whose
 *   `transformResponse(res, ctx)` may put a stream on its body.
 * A call that throws, rejects or gives what lila cannot send is the
 * request's 500 (logged with the hook's file, never told the client); an
 * async call past `--hook-timeout` its 504.
 */
class RouteHooks {
  /**
   * @param {import('./hook-modules').Hook} hook
   * @param {number} timeout ms, --hook-timeout
   * @param {Map<string, import('../pool-binding')> | null} bindings the http pools `ctx.pool` may name, by name
   */
  constructor(hook, timeout, bindings) {
    this.hook = hook;
    this.timeout = timeout;
    this.bindings = bindings;
  }

  /**
   * The route's hook, or null when it has none.
   *
   * @param {import('./hook-modules').Hook | null | undefined} hook
   * @param {number | undefined} timeout ms
   * @param {() => Map<string, import('../pool-binding')>} bindings made only for a hook that has `onRequest`
   * @returns {RouteHooks | null}
   */
  static from(hook, timeout, bindings) {
    if (hook === null || hook === undefined) return null;
    return new RouteHooks(hook, timeout === undefined ? 1000 : timeout, bindings());
  }

  /**
   * `onRequest`: null to go on (the request changed as the hook said), its answer, or a `LilaError`; maybe a promise.
   *
   * @param {import('../http/lifecycle/passage')} passage
   * @returns {object | null | Promise<object | null>}
   */
  answer(passage) {
    const onRequest = this.hook.functions.onRequest;
    if (onRequest === undefined) return null;
    const req = new HookRequest(passage);
    const ctx = this.contextOf(passage);
    ctx.choosing = true;
    const outcome = this.call('onRequest', onRequest, req, ctx, passage, (answer) => this.afterRequest(passage, req, answer));
    if (outcome === null || typeof outcome.then !== 'function') {
      ctx.choosing = false;
      return outcome;
    }
    // Past its timeout, what the hook still does to ctx.pool changes nothing.
    return outcome.then((result) => {
      ctx.choosing = false;
      return result;
    });
  }

  /**
   * An observer of this request's answer, when the hook has `onResponse` or `transformResponse`.
   *
   * @param {import('../http/lifecycle/passage')} passage
   * @returns {{responseHead: Function} | null}
   */
  open(passage) {
    const { onResponse, transformResponse } = this.hook.functions;
    if (onResponse === undefined && transformResponse === undefined) return null;
    return { responseHead: (_passage, status, headers, bodiless) => this.responseHead(passage, status, headers, bodiless) };
  }

  // The request as onRequest left it, applied; its answer made, if it gave one.
  afterRequest(passage, req, answer) {
    const edits = passage.edits ?? new RequestEdits();
    req.editsInto(edits);
    if (edits.target !== null || edits.fields !== null) passage.edits = edits;
    return answer === undefined || answer === null ? null : hookAnswer(answer, req.method);
  }

  // onResponse, then transformResponse: the fields the client gets, a LilaError, or a promise of one of them.
  responseHead(passage, status, headers, bodiless) {
    const { onResponse, transformResponse } = this.hook.functions;
    const res = new HookResponse(status, headers, bodiless);
    const ctx = this.contextOf(passage);
    const transform = () => {
      const result = res.result();
      if (result.status !== status) (passage.edits ??= new RequestEdits()).status = result.status;
      if (transformResponse === undefined || bodiless || passage.request.method === 'HEAD') return result.headers;
      return this.call('transformResponse', transformResponse, res, ctx, passage, (stream) => this.transformed(passage, result.headers, stream));
    };
    if (onResponse === undefined) return this.settled(passage, transform);
    return this.call('onResponse', onResponse, res, ctx, passage, transform);
  }

  // The stream transformResponse gave (if any) on the body: its length is then unknown, its ETag weak.
  transformed(passage, headers, stream) {
    if (stream === undefined || stream === null) return headers;
    if (typeof stream.pipe !== 'function' && !(typeof stream.readable === 'object' && typeof stream.writable === 'object')) {
      throw new LilaError(codes.HOOK, 'transformResponse returned no stream (a stream.Transform or a TransformStream)', 500);
    }
    const filter = new TransformFilter(stream, passage);
    filter.stream.on('error', (err) => this.failed(passage, 'transformResponse', err));
    passage.filterBody(filter);
    return weakened(withoutField(headers, 'content-length'));
  }

  /**
   * Calls one of the hook's functions and goes on with what it gave (`then`), at once or once its
   * promise settles within --hook-timeout; counted. What it throws, rejects with, or a `then` that
   * throws, is a LilaError (500), logged; past the timeout, a LilaError (504).
   */
  call(point, fn, subject, ctx, passage, then) {
    const started = performance.now();
    let result;
    try {
      result = fn(subject, ctx);
    } catch (err) {
      this.hook.counters.count(point, performance.now() - started, 'error');
      return this.failed(passage, point, err);
    }
    if (result === null || typeof result !== 'object' || typeof result.then !== 'function') {
      this.hook.counters.count(point, performance.now() - started, 'ok');
      return this.settled(passage, () => then(result), point);
    }
    return deadline(result, this.timeout).then(
      (value) => {
        if (value === TIMED_OUT) {
          this.hook.counters.count(point, performance.now() - started, 'timeout');
          passage.engine.logger.warn(`hook ${this.hook.name}: ${point} took longer than --hook-timeout (${this.timeout} ms)`,
            { client: passage.clientAddress });
          return new LilaError(codes.TIMEOUT, `the request's hook took longer than ${this.timeout} ms`, 504);
        }
        this.hook.counters.count(point, performance.now() - started, 'ok');
        return this.settled(passage, () => then(value), point);
      },
      (err) => {
        this.hook.counters.count(point, performance.now() - started, 'error');
        return this.failed(passage, point, err);
      }
    );
  }

  // What comes after a call, with its own mistakes (a bad field, a path) made the request's 500.
  settled(passage, next, point = 'onResponse') {
    try {
      return next();
    } catch (err) {
      return this.failed(passage, point, err);
    }
  }

  // A call that failed: said in the log with where in the hook's file, and the request's 500.
  failed(passage, point, err) {
    const message = err instanceof Error ? err.message : String(err);
    const at = err instanceof LilaError ? '' : placeOf(err, this.hook.name);
    passage.engine.logger.error(`hook ${this.hook.name}: ${point} failed: ${message}${at}`,
      { client: passage.clientAddress, method: passage.request.method, url: passage.request.url });
    return new LilaError(codes.HOOK, 'the request\'s hook failed', 500);
  }

  contextOf(passage) {
    passage.hookContext ??= new HookContext(passage, this);
    return passage.hookContext;
  }
}

module.exports = RouteHooks;

// A promise's value, or TIMED_OUT past `ms`.
function deadline(promise, ms) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms, TIMED_OUT);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      }
    );
  });
}

// A strong ETag made weak: the body is no longer the one it named.
function weakened(headers) {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].toLowerCase() === 'etag' && !headers[i + 1].startsWith('W/')) {
      const out = headers.slice();
      out[i + 1] = `W/${headers[i + 1]}`;
      return out;
    }
  }
  return headers;
}

// ` (at FILE:LINE:COL)`: the first frame of the hook's file in an error's stack, or nothing.
function placeOf(err, file) {
  const stack = err instanceof Error && typeof err.stack === 'string' ? err.stack : '';
  const frame = stack.split('\n').find((line) => line.includes(file));
  if (frame === undefined) return '';
  const match = /(?:file:\/\/)?(\/[^\s()?]+)(?:\?[^:\s)]*)?:(\d+):(\d+)/.exec(frame);
  return match === null ? '' : ` (at ${match[1]}:${match[2]}:${match[3]})`;
}
