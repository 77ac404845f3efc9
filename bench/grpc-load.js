'use strict';

const { cpuDuring } = require('./proc-stats');
const { helloMethod } = require('./grpc-backends');

const WARMUP_SECONDS = 1;
const REQUEST = Buffer.from('Hello\n');
// A call still unanswered by then counts as an error.
const DEADLINE_MS = 10000;

/**
 * gRPC unary calls with @grpc/grpc-js over one channel (one HTTP/2
 * connection): `concurrency` calls outstanding at all times, each answered
 * call followed at once by the next, for `WARMUP_SECONDS` (not counted), then
 * `duration` seconds on the same channel, the CPU time of `pids` read right
 * before and after. Calls still outstanding at the end finish and count.
 *
 * @param {object} options
 * @param {number} options.port at 127.0.0.1, h2c
 * @param {number} options.concurrency calls outstanding
 * @param {number} options.duration seconds
 * @param {number[]} options.pids the proxy's process tree; empty for none
 * @returns {Promise<{rps: number, requests: number, p50: number, p99: number, errors: number, cpu: number | null}>}
 *   `rps` and `requests` count calls that ended with status OK; latencies in ms; `errors` the other calls
 * @throws {Error} when no call succeeds, with the first failure's message
 */
async function unaryCalls({ port, concurrency, duration, pids }) {
  const grpc = require('@grpc/grpc-js');
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    await drive(client, concurrency, WARMUP_SECONDS);
    const { value: run, cpu } = await cpuDuring(pids, () => drive(client, concurrency, duration));
    const done = run.latencies.length;
    if (done === 0) throw new Error(`no gRPC call succeeded (${run.errors} failed): ${run.firstError}`);
    const sorted = Float64Array.from(run.latencies).sort();
    return {
      rps: done / run.seconds,
      requests: done,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      errors: run.errors,
      cpu
    };
  } finally {
    client.close();
  }
}

module.exports = { unaryCalls };

// `concurrency` loops of one call at a time until `seconds` have passed; resolves once the last has finished.
async function drive(client, concurrency, seconds) {
  const { path, requestSerialize, responseDeserialize } = helloMethod();
  const run = { latencies: [], errors: 0, firstError: null };
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  const call = () =>
    new Promise((resolve) => {
      const begun = process.hrtime.bigint();
      const options = { deadline: Date.now() + DEADLINE_MS };
      client.makeUnaryRequest(path, requestSerialize, responseDeserialize, REQUEST, options, (err) => {
        if (err === null) run.latencies.push(Number(process.hrtime.bigint() - begun) / 1e6);
        else {
          run.errors++;
          run.firstError ??= err.message;
        }
        resolve();
      });
    });
  const caller = async () => {
    while (process.hrtime.bigint() < deadline) await call();
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
  run.seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return run;
}

function percentile(sorted, fraction) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}
