'use strict';

const { Span, SpanKind, StatusCode } = require('../../tracing/span');
const { describeError } = require('../../errors');

const LOCAL_SAMPLED = 0x101;
const REMOTE_SAMPLED = 0x301;

/**
 * The spans of one request lila records (`--otlp-endpoint`, a sampled
 * trace): its SERVER span, from its head's arrival to its record, and a
 * CLIENT span per backend attempt, from the slot's taking to its release,
 * the backend's traceparent naming it as parent. A request lila sends for
 * no client (a cache's fetch) has no SERVER span: its attempts' parent is
 * the span of the client's request that asked (its traceparent).
 *
 * Made by the `Passage` with its ids; every engine's attempts go through
 * the backend slot, so none of them knows about traces.
 */
class RequestTrace {
  /**
   * @param {import('../../tracing/tracer')} tracer
   * @param {import('../../actions/request-id').RequestIds} ids a sampled trace's
   * @param {boolean} serves a client's request: a SERVER span of lila's own id; false: a fetch for no client
   * @param {string[]} rawHeaders the request's, for the client's tracestate
   */
  constructor(tracer, ids, serves, rawHeaders) {
    this.tracer = tracer;
    this.ids = ids;
    /** @type {Span | null} */
    this.server = serves ? new Span('', SpanKind.SERVER, ids.traceId, ids.parentId, undefined, ids.spanId) : null;
    // OTLP's flags: sampled, and whether its parent is remote (a client's span) known (0x100) and true (0x200).
    if (this.server !== null) {
      this.server.flags = ids.parentId === null ? LOCAL_SAMPLED : REMOTE_SAMPLED;
      if (ids.keepsTracestate) this.server.traceState = tracestateOf(rawHeaders);
    }
    /** @type {Span | null} the attempt under way */
    this.attempt = null;
  }

  /**
   * A backend was acquired: a CLIENT span starts, and the backend's traceparent names it.
   *
   * @param {import('../../balancing/backend')} backend
   * @param {string} method
   */
  attemptStarted(backend, method) {
    this.attemptEnded();
    const parent = this.server === null ? this.ids.parentId : this.server.spanId;
    const span = new Span(method, SpanKind.CLIENT, this.ids.traceId, parent);
    span.flags = LOCAL_SAMPLED;
    span.setAttribute('http.request.method', method);
    span.setAttribute('server.address', backend.host);
    span.setAttribute('server.port', backend.port);
    span.setAttribute('lila.backend', backend.name);
    this.attempt = span;
    this.ids.traceparent = span.traceparent(true);
  }

  /**
   * The backend's response head came.
   *
   * @param {number} status
   */
  attemptAnswered(status) {
    const span = this.attempt;
    if (span === null) return;
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) span.setAttribute('error.type', String(status)).setStatus(StatusCode.ERROR);
  }

  /**
   * The attempt failed: a refused connect, a reset, a timeout, a response cut short.
   *
   * @param {Error} err
   */
  attemptFailed(err) {
    const span = this.attempt;
    if (span === null || span.statusCode === StatusCode.ERROR) return;
    span.setAttribute('error.type', err.code || err.name || 'Error').setStatus(StatusCode.ERROR, describeError(err));
  }

  /** The slot was given back: the attempt's span ends and goes to the exporter. */
  attemptEnded() {
    const span = this.attempt;
    if (span === null) return;
    this.attempt = null;
    this.tracer.export(span.end());
  }

  /**
   * The request is over: its SERVER span gets what the request was, and goes.
   *
   * @param {import('./passage')} passage recorded (`answered` set)
   */
  finish(passage) {
    this.attemptEnded();
    const span = this.server;
    if (span === null) return;
    this.server = null;
    const request = passage.request;
    const route = passage.route;
    const httpRoute = route === null ? null : routeTemplate(route);
    span.name = httpRoute === null ? request.method : `${request.method} ${httpRoute}`;
    const url = request.url;
    const query = url.indexOf('?');
    span.setAttribute('http.request.method', request.method);
    span.setAttribute('url.path', query === -1 ? url : url.slice(0, query));
    span.setAttribute('url.scheme', passage.scheme);
    serverAddress(span, passage.host, passage.clientSocket);
    if (passage.clientAddress !== undefined) span.setAttribute('client.address', passage.clientAddress);
    const agent = request.headers['user-agent'];
    if (typeof agent === 'string') span.setAttribute('user_agent.original', agent);
    if (httpRoute !== null) span.setAttribute('http.route', httpRoute);
    span.setAttribute('http.response.status_code', passage.answered);
    span.setAttribute('network.protocol.version', request.h2 === true ? '2' : request.httpVersionMajor === undefined ? '1.1' : `${request.httpVersionMajor}.${request.httpVersionMinor}`);
    if (route !== null) span.setAttribute('lila.route', route.text);
    if (passage.pool !== null) span.setAttribute('lila.pool', passage.pool.name);
    if (passage.answered >= 500) span.setAttribute('error.type', String(passage.answered)).setStatus(StatusCode.ERROR);
    this.tracer.export(span.end());
  }
}

module.exports = RequestTrace;

// The client's tracestate, its fields joined as one (RFC 9110 §5.3), '' for none.
function tracestateOf(rawHeaders) {
  let state = '';
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name.length === 10 && name.toLowerCase() === 'tracestate') state = state === '' ? rawHeaders[i + 1] : `${state},${rawHeaders[i + 1]}`;
  }
  return state;
}

// OpenTelemetry's http.route: the route's path as a template (a prefix with its `*`), null for a route of hosts only.
function routeTemplate(route) {
  const path = route.path;
  if (path === null || path === undefined) return null;
  return route.pathKind === 'prefix' ? `${path}*` : path;
}

// server.address and server.port: the Host the client asked for, else the listener's own address.
function serverAddress(span, host, socket) {
  let port = -1;
  let name = typeof host === 'string' ? host : '';
  const colon = name.lastIndexOf(':');
  if (colon !== -1 && colon > name.lastIndexOf(']')) {
    port = Number(name.slice(colon + 1));
    name = name.slice(0, colon);
  }
  if (name.startsWith('[')) name = name.slice(1, -1);
  if (name === '' && socket !== null && socket !== undefined) name = socket.localAddress || '';
  if (port === -1 && socket !== null && socket !== undefined && socket.localPort !== undefined) port = socket.localPort;
  if (name !== '') span.setAttribute('server.address', name);
  if (port > 0) span.setAttribute('server.port', port);
}
