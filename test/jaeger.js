'use strict';

// A real Jaeger v2 for the tracing tests: memory storage, its OTLP/HTTP receiver and its query
// API on 127.0.0.1 ports of the test's choosing, killed and started again on the same ports by a
// test. Only LILA_JAEGER names the executable (.ci/run builds Jaeger from .ci/jaeger, v1.75.0 of
// its Go module, and sets it on one Node version); locally:
//
//   (cd .ci/jaeger && go build -o /tmp/jaeger github.com/jaegertracing/jaeger/cmd/jaeger)
//   LILA_JAEGER=/tmp/jaeger mocha-one test/jaeger.test.js

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { freePorts } = require('./helpers');

const JAEGER = executable(process.env.LILA_JAEGER);
const BUILD = '(cd .ci/jaeger && go build -o /tmp/jaeger github.com/jaegertracing/jaeger/cmd/jaeger)';
const READY_WITHIN = 30000;
// How long a trace written is looked for: the storage exporter writes before the receiver
// answers (no queue), so the first look finds it; more are for a slower machine.
const FOUND_WITHIN = 5000;
const POLL = 25;
const KEEP_OUTPUT = 64 * 1024;
// The OpenTelemetry Collector's line once every component has started.
const READY = 'Everything is ready. Begin running and processing data.';
const running = new Set();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * In a mocha `before`: skips the suite, saying why, unless LILA_JAEGER names an executable, or
 * fails it when `LILA_REQUIRE_JAEGER=1`.
 *
 * @param {Mocha.Context} context
 */
function needJaeger(context) {
  if (JAEGER !== null) return;
  const missing = `LILA_JAEGER does not name an executable (LILA_JAEGER=${process.env.LILA_JAEGER || ''}); build Jaeger with: ${BUILD}`;
  if (process.env.LILA_REQUIRE_JAEGER === '1') throw new Error(`LILA_REQUIRE_JAEGER=1 but ${missing}`);
  console.log(`      skipped: ${missing}`);
  context.skip();
}

/**
 * Starts Jaeger (memory storage, the OTLP/HTTP receiver, the query API) on free 127.0.0.1
 * ports and resolves once it is ready; `close()` kills it and removes its files.
 *
 * @returns {Promise<{endpoint: string, queryUrl: string, trace: (traceId: string) => Promise<object | null>,
 *   untilTrace: (traceId: string, spans: number) => Promise<object>, uiTrace: (traceId: string) => Promise<object | null>,
 *   services: () => Promise<string[]>,
 *   kill: () => Promise<void>, start: () => Promise<void>, close: () => Promise<void>, output: () => string}>}
 *   endpoint: the OTLP/HTTP base URL (--otlp-endpoint); trace(): the v3 API's answer for a trace (OTLP/JSON's
 *   `{resourceSpans}`), null while it has none
 */
async function startJaeger() {
  if (JAEGER === null) throw new Error('startJaeger: LILA_JAEGER does not name an executable (call needJaeger first)');
  // The ports are found free and let go before Jaeger binds them: another test process may take
  // one in between, and then it starts again on others.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch();
    } catch (err) {
      if (attempt === 3 || !/address already in use/.test(err.message)) throw err;
    }
  }
}

module.exports = { JAEGER, needJaeger, startJaeger };

async function launch() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-jaeger-'));
  const [otlpPort, queryPort, grpcPort] = await freePorts(3);
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, configText({ otlpPort, queryPort, grpcPort }));
  const state = { output: '', child: null, closed: null };

  function run() {
    const child = spawn(JAEGER, ['--config', `file:${config}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (text) => { state.output = (state.output + text).slice(-KEEP_OUTPUT); };
    child.stdout.setEncoding('utf8').on('data', keep);
    child.stderr.setEncoding('utf8').on('data', keep);
    child.on('error', (err) => keep(`\njaeger could not be started: ${err.message}\n`));
    running.add(child);
    state.child = child;
    state.closed = new Promise((resolve) => child.once('close', (code, signal) => {
      running.delete(child);
      resolve(code === null ? signal : code);
    }));
    const from = state.output.length;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`jaeger was not ready within ${READY_WITHIN} ms:\n${state.output}`));
      }, READY_WITHIN);
      const onData = () => {
        if (!state.output.slice(from).includes(READY)) return;
        clearTimeout(timer);
        child.stderr.off('data', onData);
        child.stdout.off('data', onData);
        resolve();
      };
      child.stderr.on('data', onData);
      child.stdout.on('data', onData);
      state.closed.then((code) => {
        clearTimeout(timer);
        reject(new Error(`jaeger exited (${code}) before it was ready:\n${state.output}`));
      });
    });
  }

  async function kill() {
    if (state.child === null || !running.has(state.child)) return;
    state.child.kill('SIGKILL');
    await state.closed;
  }

  const queryUrl = `http://127.0.0.1:${queryPort}`;
  async function trace(traceId) {
    const { status, body } = await get(queryPort, `/api/v3/traces/${traceId}?raw_traces=true`);
    if (status === 404) return null;
    if (status !== 200) throw new Error(`GET /api/v3/traces/${traceId}: ${status} ${body}`);
    return JSON.parse(body).result;
  }
  const jaeger = {
    endpoint: `http://127.0.0.1:${otlpPort}`,
    queryUrl,
    trace,
    // The trace once it holds `spans` spans; throws after FOUND_WITHIN.
    async untilTrace(traceId, spans) {
      const deadline = Date.now() + FOUND_WITHIN;
      for (;;) {
        const found = await trace(traceId);
        const count = found === null ? 0 : found.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)).length;
        if (count >= spans) return found;
        if (Date.now() > deadline) throw new Error(`jaeger holds ${count} of the ${spans} spans of trace ${traceId} after ${FOUND_WITHIN} ms`);
        await sleep(POLL);
      }
    },
    // The trace as the Jaeger UI reads it (the v1 API's JSON), null while it has none.
    async uiTrace(traceId) {
      const { status, body } = await get(queryPort, `/api/traces/${traceId}`);
      if (status === 404) return null;
      if (status !== 200) throw new Error(`GET /api/traces/${traceId}: ${status} ${body}`);
      return JSON.parse(body).data[0];
    },
    async services() {
      const { status, body } = await get(queryPort, '/api/v3/services');
      if (status !== 200) throw new Error(`GET /api/v3/services: ${status} ${body}`);
      return JSON.parse(body).services || [];
    },
    kill,
    start: run,
    async close() {
      await kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    output: () => state.output
  };
  try {
    await run();
  } catch (err) {
    await jaeger.close();
    throw err;
  }
  return jaeger;
}

// Jaeger's configuration (an OpenTelemetry Collector's): the OTLP/HTTP receiver straight to memory
// storage, the query API, and no other listener (no metrics port, no gRPC receiver).
function configText({ otlpPort, queryPort, grpcPort }) {
  return `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${queryPort}
    grpc:
      endpoint: 127.0.0.1:${grpcPort}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlpPort}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}

function get(port, pathname) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: pathname, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(5000, () => req.destroy(new Error(`no answer within 5000 ms to GET ${pathname}`)));
    req.on('error', reject);
  });
}

function executable(file) {
  if (file === undefined || file === '') return null;
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return file;
  } catch {
    return null;
  }
}
