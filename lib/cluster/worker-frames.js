'use strict';

const http = require('node:http');
const { quantile } = require('../ops/dashboard/quantile');
const { errorRate, soFar } = require('../ops/dashboard/sampler');
const { mergeListeners } = require('./merge-answers');
const { layerOf } = require('../layers');

// A worker's frame older than this is left out: the worker is gone or stuck.
const FRESH_MS = 2500;
// An event larger than this is no frame of lila's: the stream is dropped.
const MAX_EVENT_CHARS = 8 * 1024 * 1024;
const RATE_FIELDS = ['per_second', 'errors_per_second'];

/**
 * The dashboard's source in the primary of `--workers`: while a page
 * listens (between `start` and `stop`), one `GET /events` stream to each
 * worker's private admin API, each worker sampling its own counters once a
 * second; `read` adds up the latest frame of every worker. When the last
 * page goes, the streams close and the workers stop sampling too.
 */
class WorkerFrames {
  /**
   * @param {{adminPorts: () => number[]}} primary
   * @param {(statuses: object[]) => object} mergeStatus how `/status` merges (cluster/merge-answers.js)
   */
  constructor(primary, mergeStatus) {
    this.primary = primary;
    this.mergeStatus = mergeStatus;
    /** @type {Map<number, {request: http.ClientRequest, buffer: string, latest: object | null, at: number}>} */
    this.streams = new Map();
  }

  /** Opens a stream to every worker. */
  start() {
    this.connect();
  }

  /**
   * @returns {object | null} the workers' frames as one, as a single process's
   *   would be, with `workers`; null while no worker has sent one
   */
  read() {
    this.connect();
    const now = Date.now();
    const frames = [];
    for (const stream of this.streams.values()) {
      if (stream.latest !== null && now - stream.at <= FRESH_MS) frames.push(stream.latest);
    }
    return frames.length === 0 ? null : mergeFrames(frames, this.mergeStatus, now);
  }

  /** Closes every stream. */
  stop() {
    for (const stream of this.streams.values()) stream.request.destroy();
    this.streams.clear();
  }

  // A stream to each worker that has none (a worker restarted, or started late).
  connect() {
    const ports = this.primary.adminPorts();
    for (const [port, stream] of this.streams) {
      if (!ports.includes(port)) {
        stream.request.destroy();
        this.streams.delete(port);
      }
    }
    for (const port of ports) if (!this.streams.has(port)) this.open(port);
  }

  open(port) {
    const request = http.get({ host: '127.0.0.1', port, path: '/events', agent: false, headers: { Accept: 'text/event-stream' } });
    const stream = { request, buffer: '', latest: null, at: 0 };
    this.streams.set(port, stream);
    const forget = () => {
      if (this.streams.get(port) === stream) this.streams.delete(port);
    };
    request.on('error', forget);
    request.on('close', forget);
    request.on('response', (response) => {
      response.on('error', () => {});
      if (response.statusCode !== 200) {
        request.destroy();
        return;
      }
      response.setEncoding('utf8');
      response.on('data', (text) => {
        stream.buffer += text;
        readEvents(stream);
        if (stream.buffer.length > MAX_EVENT_CHARS) request.destroy();
      });
    });
  }
}

/**
 * Adds up workers' frames: `/status` merges as it does, the rates and each
 * second's histogram add up (so p50 and p99 are those of every worker's
 * requests together), and so do what they did since start (before their first
 * second), open connections and requests in flight; a backend's health check
 * is the failing one if any worker's fails; the listeners and routes are the
 * first worker's (every worker runs the same config), their requests added up.
 *
 * @param {object[]} frames one per worker, as `Sampler.sample` makes them
 * @param {(statuses: object[]) => object} mergeStatus
 * @param {number} [now] ms since the epoch
 * @returns {object}
 */
function mergeFrames(frames, mergeStatus, now = Date.now()) {
  const [first] = frames;
  const bounds = first.duration_bounds;
  // A layer counted by connection (tcp): its failed connects are apart from its connections.
  const byConnection = !layerOf(first.layer).countsRequests;
  const byName = new Map();
  for (const frame of frames) {
    for (const backend of frame.backends) {
      const merged = byName.get(backendKey(backend));
      if (merged === undefined) byName.set(backendKey(backend), { rates: [backend], check: backend.check });
      else {
        merged.rates.push(backend);
        merged.check = worseCheck(merged.check, backend.check);
      }
    }
  }
  const status = mergeStatus(frames);
  const backends = status.backends.map((backend) => {
    const { rates, check } = byName.get(backendKey(backend));
    const merged = { ...backend, ...addRates(rates, bounds, byConnection), check };
    // The first worker's since-start figures, which mergeStatus kept, are not every worker's.
    if (merged.so_far === backend.so_far) delete merged.so_far;
    return merged;
  });
  const totals = addRates(frames.map((frame) => frame.totals), bounds, false);
  return {
    time: now,
    version: first.version,
    ...status,
    listen: first.listen,
    open_connections: sum(frames, (frame) => frame.open_connections),
    actions: first.actions,
    duration_bounds: bounds,
    ...(first.listeners === undefined ? {} : { listeners: mergeListeners(frames) }),
    totals: { ...totals, active: sum(frames, (frame) => frame.totals.active) },
    backends
  };
}

module.exports = { WorkerFrames, mergeFrames };

// Every complete event in the buffer; a snapshot becomes the latest frame.
function readEvents(stream) {
  let end;
  while ((end = stream.buffer.indexOf('\n\n')) !== -1) {
    const block = stream.buffer.slice(0, end);
    stream.buffer = stream.buffer.slice(end + 2);
    let name = 'message';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) name = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (name !== 'snapshot') continue;
    try {
      stream.latest = JSON.parse(data);
      stream.at = Date.now();
    } catch {
      // Not a frame: the previous one stands.
    }
  }
}

// Rates of the workers that have them (a worker's first frame has none); what they did since
// start when every worker's has it (the whole's always; a backend's before its first second).
function addRates(list, bounds, tcp) {
  const out = secondsOf(list, bounds, tcp);
  if (list.every((rates) => rates.so_far !== null && typeof rates.so_far === 'object')) out.so_far = addSoFar(list, bounds, tcp);
  return out;
}

function secondsOf(list, bounds, tcp) {
  const known = list.filter((rates) => rates.per_second !== null && rates.per_second !== undefined);
  if (known.length === 0) {
    return { per_second: null, errors_per_second: null, error_rate: null, p50_seconds: null, p99_seconds: null, durations: null };
  }
  const out = {};
  for (const field of RATE_FIELDS) out[field] = sum(known, (rates) => rates[field]);
  const durations = new Array(bounds.length + 1).fill(0);
  for (const rates of known) rates.durations.forEach((count, i) => { durations[i] += count; });
  // A tcp backend's failed connects are not among its connections; a request's 5xx is among the requests.
  out.error_rate = errorRate(out.errors_per_second, tcp ? out.per_second + out.errors_per_second : out.per_second);
  out.p50_seconds = quantile(0.5, bounds, durations);
  out.p99_seconds = quantile(0.99, bounds, durations);
  out.durations = durations;
  return out;
}

// What every worker did since start, added up: counts, and histograms (then p50 and p99 of all).
function addSoFar(list, bounds, tcp) {
  const durations = new Array(bounds.length + 1).fill(0);
  for (const rates of list) rates.so_far.durations.forEach((count, i) => { durations[i] += count; });
  const count = sum(list, (rates) => rates.so_far.count);
  const errors = sum(list, (rates) => rates.so_far.errors);
  return soFar({ count, errors, attempts: tcp ? count + errors : count, durations }, bounds);
}

function worseCheck(a, b) {
  if (a === null || a === undefined) return b;
  if (b === null || b === undefined) return a;
  if (a.ok !== b.ok) return a.ok ? b : a;
  return b.at > a.at ? b : a;
}

function sum(list, of) {
  let total = 0;
  for (const item of list) total += of(item);
  return total;
}

// A backend across workers: its name, within its pool when a config file names pools.
function backendKey(backend) {
  return backend.pool === undefined ? backend.name : `${backend.pool}\n${backend.name}`;
}
