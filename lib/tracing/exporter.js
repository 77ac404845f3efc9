'use strict';

const http = require('node:http');
const https = require('node:https');
const { exchange, socketMessage } = require('../net/http-exchange');
const { tracesUrl } = require('./otlp-url');
const { clock } = require('./clock');
const { encodeTraceRequest } = require('./otlp-protobuf');
const { decodeTraceResponse } = require('./otlp-protobuf-response');
const { encodeTraceRequestJson, decodeTraceResponseJson } = require('./otlp-json');
const { LilaError, codes } = require('../errors');
const { version } = require('../../package.json');

const PROTOCOLS = {
  'http/protobuf': { type: 'application/x-protobuf', encode: encodeTraceRequest, decode: decodeTraceResponse },
  'http/json': {
    type: 'application/json',
    encode: encodeTraceRequestJson,
    decode: (body) => decodeTraceResponseJson(body.toString('utf8'))
  }
};
const DEFAULTS = {
  protocol: 'http/protobuf', serviceName: 'lila', maxQueue: 2048, maxBatch: 512, interval: 5000, timeout: 10000,
  retries: 5, backoff: 1000, maxBackoff: 30000
};
// OTLP/HTTP's answers worth the same batch again; any other failure status is final.
const RETRYABLE = new Set([429, 502, 503, 504]);
// OTLP recommends that a client read no answer over 4 MiB.
const MAX_ANSWER = 4 * 1024 * 1024;
const MAX_RETRY_AFTER_S = 3600;

/**
 * Sends ended spans to an OpenTelemetry collector over OTLP/HTTP
 * (`POST <endpoint>/v1/traces`, protobuf or JSON): a bounded queue, batches
 * sent when full or at least every `interval`, one export in flight, each
 * within a deadline, retried with backoff on 429, 502, 503, 504 and
 * connection failures, dropped after `retries`. A collector lost is said once
 * (warn) and once when back (info). Nothing here blocks or throws into the
 * code that hands it spans: past the queue, spans are dropped and counted.
 */
class Exporter {
  /**
   * @param {object} options
   * @param {string} options.endpoint the collector's base URL, `http://host:4318` (`/v1/traces` is appended)
   * @param {'http/protobuf' | 'http/json'} [options.protocol]
   * @param {Record<string, string>} [options.headers] sent with every export (a collector's credentials)
   * @param {string} [options.serviceName] the resource's `service.name` (lila)
   * @param {Array<string | number | boolean>} [options.resource] more resource attributes, `[key, value, ...]`
   * @param {number} [options.maxQueue] spans waiting at most (2048); past them, dropped
   * @param {number} [options.maxBatch] spans an export carries at most (512)
   * @param {number} [options.interval] ms a span waits at most before its export starts (5000)
   * @param {number} [options.timeout] ms an export may take, connect to answer (10000)
   * @param {number} [options.retries] tries of a batch after its first (5); then it is dropped
   * @param {number} [options.backoff] ms before the first retry (1000), doubled each time, with jitter
   * @param {number} [options.maxBackoff] the longest wait between two tries (30000), Retry-After included
   * @param {ExporterLogger | null} [options.logger] the lost and back lines
   * @param {import('node:https').AgentOptions} [options.tls] an `https` endpoint's TLS options (ca)
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option and what was received
   */
  constructor(options) {
    // An option given as undefined keeps its default, as one the command line did not give does.
    const settings = { ...DEFAULTS };
    for (const [name, value] of Object.entries(options)) if (value !== undefined) settings[name] = value;
    const url = tracesUrl(settings.endpoint, 'endpoint');
    const protocol = PROTOCOLS[settings.protocol];
    check(protocol !== undefined, 'protocol', 'http/protobuf or http/json', settings.protocol);
    check(typeof settings.serviceName === 'string' && settings.serviceName !== '', 'serviceName', 'a non-empty string', settings.serviceName);
    for (const name of ['maxQueue', 'maxBatch', 'interval', 'timeout', 'backoff', 'maxBackoff']) {
      check(Number.isInteger(settings[name]) && settings[name] > 0, name, 'a positive integer', settings[name]);
    }
    check(Number.isInteger(settings.retries) && settings.retries >= 0, 'retries', 'an integer of 0 or more', settings.retries);
    this.url = url.href;
    this.protocol = protocol;
    this.settings = settings;
    this.origin = {
      resource: ['service.name', settings.serviceName, ...(settings.resource || [])],
      scope: { name: 'lila', version }
    };
    const secure = url.protocol === 'https:';
    this.module = secure ? https : http;
    // One socket kept alive: one export is in flight at a time.
    this.agent = new this.module.Agent({ keepAlive: true, maxSockets: 1, ...(secure ? settings.tls : undefined) });
    this.request = {
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port,
      path: url.pathname,
      agent: this.agent,
      headers: { 'user-agent': `lila/${version}`, ...settings.headers, 'content-type': protocol.type }
    };
    this.logger = settings.logger || null;
    /** @type {import('./span').Span[]} */
    this.queue = [];
    /** What became of the spans handed over: counters, read by metrics. */
    this.counts = { exported: 0, dropped: 0, rejected: 0, exports: 0, failures: 0 };
    this.up = true;
    this.sending = false;
    this.closing = false;
    this.timer = null;
    this.wake = null;
    this.idlers = [];
    this.closed = null;
    // The export in flight, as the function that ends it (net/http-exchange.js's `pending`).
    this.pending = new Set();
  }

  /**
   * Takes an ended span for export (one not ended yet is ended now). Never
   * throws and never waits: a full queue, or a closed exporter, drops it.
   *
   * @param {import('./span').Span} span
   * @returns {boolean} false when it was dropped
   */
  add(span) {
    if (this.closing || this.queue.length >= this.settings.maxQueue) {
      this.counts.dropped++;
      return false;
    }
    if (span.endTime === -1) span.end();
    this.queue.push(span);
    if (!this.sending) this.schedule();
    return true;
  }

  /**
   * @returns {number} spans waiting for export
   */
  get queued() {
    return this.queue.length;
  }

  /**
   * Sends what is queued now, in batches, and resolves when it is sent or
   * dropped (after the retries). Never rejects.
   *
   * @returns {Promise<void>}
   */
  async flush() {
    this.clearTimer();
    while (this.sending) await this.idle();
    this.sending = true;
    await send(this, true);
  }

  /**
   * Stops taking spans and sends what is queued within `deadline` ms (no
   * waiting between tries: a failed batch is dropped); what is left then,
   * the export in flight included, is dropped. Resolves with the counts. Never rejects.
   *
   * @param {number} [deadline] ms
   * @returns {Promise<{exported: number, dropped: number, rejected: number, exports: number, failures: number}>}
   */
  async close(deadline = this.settings.timeout) {
    if (!this.closing) {
      this.closing = true;
      this.clearTimer();
      if (this.wake !== null) this.wake();
      let timer;
      const late = new Promise((resolve) => { timer = setTimeout(resolve, deadline); });
      this.closed = Promise.race([this.flush(), late]).then(async () => {
        clearTimeout(timer);
        this.counts.dropped += this.queue.length;
        this.queue.length = 0;
        // The export in flight ends now, and its batch is counted as dropped before close() resolves.
        for (const end of this.pending) end(Object.assign(new Error(`not sent within ${deadline} ms of the stop`), { phase: 'close' }));
        while (this.sending) await this.idle();
        this.agent.destroy();
      });
    }
    await this.closed;
    return { ...this.counts };
  }

  // Sends batches while there are spans, or, unless `all`, while a whole batch is waiting.
  async drain(all) {
    while (this.queue.length > 0 && (all || this.queue.length >= this.settings.maxBatch)) {
      const batch = this.queue.splice(0, this.settings.maxBatch);
      await this.export(batch);
    }
  }

  // One batch: encoded once, tried until it is taken, refused, or out of retries.
  async export(batch) {
    let body;
    try {
      clock.resync();
      body = this.protocol.encode(batch, this.origin);
    } catch (err) {
      this.counts.dropped += batch.length;
      this.changed(false, `a batch that could not be encoded (${err.message})`);
      return;
    }
    const headers = { ...this.request.headers, 'content-length': body.length };
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.post({ ...this.request, headers }, body);
      this.counts.exports++;
      if (outcome.ok) {
        const rejected = Math.min(outcome.rejected, batch.length);
        this.counts.exported += batch.length - rejected;
        this.counts.rejected += rejected;
        return this.changed(true);
      }
      this.counts.failures++;
      // What a stop cuts short says nothing of the collector.
      if (!this.closing) this.changed(false, outcome.why);
      if (!outcome.retry || attempt >= this.settings.retries || this.closing) {
        this.counts.dropped += batch.length;
        return;
      }
      await this.pause(this.backoffOf(attempt, outcome.retryAfter));
    }
  }

  // One POST: {ok, rejected} or {ok: false, retry, why, retryAfter}.
  async post(request, body) {
    let answer;
    try {
      answer = await exchange(this.module, request, body, { timeout: this.settings.timeout, maxBody: MAX_ANSWER, pending: this.pending });
    } catch (err) {
      const why = err.phase === 'deadline' ? `no answer within ${this.settings.timeout} ms` : socketMessage(err);
      return { ok: false, retry: err.phase !== 'size' && err.phase !== 'setup', why, retryAfter: null };
    }
    if (answer.status >= 200 && answer.status < 300) return { ok: true, ...this.protocol.decode(answer.body) };
    return { ok: false, retry: RETRYABLE.has(answer.status), why: `status ${answer.status}`, retryAfter: retryAfterOf(answer.headers['retry-after']) };
  }

  // Exponential, with up to half of it taken off at random, so that lilas restarted together spread out.
  backoffOf(attempt, retryAfter) {
    const { backoff, maxBackoff } = this.settings;
    if (retryAfter !== null) return Math.min(retryAfter * 1000, maxBackoff);
    const full = Math.min(backoff * 2 ** attempt, maxBackoff);
    return Math.round(full * (1 - Math.random() / 2));
  }

  // Waits ms, or until close() wakes it.
  pause(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  // Resolves once the batches being sent are sent.
  idle() {
    return new Promise((resolve) => { this.idlers.push(resolve); });
  }

  // What is queued: sent soon when a batch is whole (after the caller's work, not inside it), else
  // when the interval has passed.
  schedule() {
    if (this.sending || this.closing) return;
    if (this.queue.length >= this.settings.maxBatch) {
      this.clearTimer();
      this.sending = true;
      setImmediate(send, this, false);
    } else if (this.queue.length > 0 && this.timer === null) {
      this.timer = setTimeout(onInterval, this.settings.interval, this);
      this.timer.unref();
    }
  }

  // The collector's state, said once each way.
  changed(up, why) {
    if (up === this.up) return;
    this.up = up;
    if (this.logger === null) return;
    if (!up) {
      this.logger.warn(`traces: the collector at ${this.url} is lost (${why}); spans are kept (up to ${this.settings.maxQueue}) ` +
        'and retried until it is back');
    } else {
      this.logger.info(`traces: the collector at ${this.url} is back (${this.counts.dropped} spans dropped so far)`);
    }
  }

  clearTimer() {
    if (this.timer === null) return;
    clearTimeout(this.timer);
    this.timer = null;
  }
}

module.exports = { Exporter, PROTOCOLS };

/**
 * @typedef {object} ExporterLogger what the exporter writes its lines with (lila's Logger fits)
 * @property {(message: string) => void} warn
 * @property {(message: string) => void} info
 */

// The interval passed with spans queued and nothing sent: send them.
function onInterval(exporter) {
  exporter.timer = null;
  if (exporter.sending || exporter.queue.length === 0) return;
  exporter.sending = true;
  send(exporter, true);
}

// Sends what is due (everything when `all`, else whole batches), then waits again. Never rejects.
async function send(exporter, all) {
  try {
    await exporter.drain(all);
  } catch (err) {
    // Not expected (each batch's failures are its own); said, so that exports go on.
    if (exporter.logger !== null) exporter.logger.warn(`traces: an export failed (${err.message})`);
  } finally {
    exporter.sending = false;
    for (const resolve of exporter.idlers.splice(0)) resolve();
    exporter.schedule();
  }
}

// Retry-After in seconds (an HTTP date is read as none: collectors send seconds).
function retryAfterOf(value) {
  if (typeof value !== 'string' || !/^[0-9]{1,9}$/.test(value)) return null;
  return Math.min(Number(value), MAX_RETRY_AFTER_S);
}

function check(ok, name, what, received) {
  if (!ok) throw new LilaError(codes.INVALID_OPTION, `"${name}" must be ${what}, received ${JSON.stringify(String(received))}`);
}
