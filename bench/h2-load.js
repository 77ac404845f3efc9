'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { cpuDuring } = require('./proc-stats');

const H2LOAD = 'h2load';
const WARMUP_SECONDS = 1;
// h2load's lines: `finished in 5.00s, 30000.00 req/s, ...`, `requests: N total, ...`, `TLS Protocol: TLSv1.3`.
const FINISHED = /^finished in [\d.]+m?s, ([\d.]+) req\/s/m;
const REQUESTS = /^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/m;
const PROTOCOL = /^Application protocol: (\S+)/m;
const TLS_LINES = { protocol: /^TLS Protocol: (\S+)/m, cipher: /^Cipher: (\S+)/m, group: /^Server Temp Key: (\S+)/m };

/**
 * HTTP/2 load with h2load (Debian `nghttp2-client`): `connections`
 * connections with `streams` concurrent streams each, `GET /`, for
 * `WARMUP_SECONDS` (not counted), then again on new connections for
 * `duration` seconds, the CPU time of `pids` read right before and after
 * that second h2load. Over TLS (`servername`), h2load offers ALPN `h2` only
 * and sends that name as SNI and `:authority`; without, h2c by prior
 * knowledge. A server that does not speak h2 fails the run.
 *
 * h2load prints no percentiles: each request's time comes from its
 * `--log-file`, p50 and p99 over the 2xx responses.
 *
 * @param {object} options
 * @param {number} options.port at 127.0.0.1
 * @param {number} options.connections
 * @param {number} options.streams concurrent streams per connection (`-m`)
 * @param {number} options.duration seconds
 * @param {number[]} options.pids the proxy's process tree; empty for none
 * @param {string} [options.servername] h2 over TLS with this SNI name; h2c without
 * @returns {Promise<{rps: number, requests: number, p50: number, p99: number, errors: number,
 *   cpu: number | null, negotiated?: Object<string, number>}>} latencies in ms; `requests` the
 *   responses h2load counted done; `errors` its failed requests (errors, resets and non-2xx);
 *   `negotiated` (TLS only) `<protocol> <cipher> <key exchange group>` of h2load's first connection
 * @throws {Error} when h2load is missing, fails, negotiates something else than h2, or gets no 2xx response
 */
async function h2load({ port, connections, streams, duration, pids, servername }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-h2load-'));
  try {
    const args = h2loadArgs({ port, connections, streams, servername });
    await runH2load([...args, '-D', String(WARMUP_SECONDS)], servername);
    const log = path.join(dir, 'requests.log');
    const { value: output, cpu } = await cpuDuring(pids, () => runH2load([...args, '-D', String(duration), `--log-file=${log}`], servername));
    const [, , done, , failed] = REQUESTS.exec(output).slice(1).map(Number);
    const sorted = latencies(fs.readFileSync(log, 'latin1'));
    const sample = {
      rps: Number(FINISHED.exec(output)[1]),
      requests: done,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      errors: failed,
      cpu
    };
    if (servername !== undefined) {
      const what = Object.values(TLS_LINES).map((line) => (line.exec(output) || [])[1] || '?').join(' ');
      sample.negotiated = { [what]: 1 };
    }
    return sample;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { h2load };

function h2loadArgs({ port, connections, streams, servername }) {
  const counts = ['-c', String(connections), '-m', String(streams)];
  if (servername === undefined) return [...counts, `http://127.0.0.1:${port}/`];
  return [...counts, '--npn-list=h2', `--connect-to=127.0.0.1:${port}`, `https://${servername}:${port}/`];
}

// Resolves to h2load's stdout once it has answered in h2 with at least one 2xx response.
function runH2load(args, servername) {
  return new Promise((resolve, reject) => {
    const child = spawn(H2LOAD, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('latin1').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('latin1').on('data', (chunk) => (stderr += chunk));
    child.once('error', (err) => {
      reject(new Error(err.code === 'ENOENT' ? 'h2load is not installed (apt-get install nghttp2-client)' : err.message));
    });
    child.once('close', (code, signal) => {
      const requests = REQUESTS.exec(stdout);
      const protocol = PROTOCOL.exec(stdout);
      const expected = servername === undefined ? 'h2c' : 'h2';
      if (requests === null || FINISHED.exec(stdout) === null) {
        reject(new Error(`h2load exited (${signal || code}) without results: ${lastWords(stderr) || lastWords(stdout)}`));
        return;
      }
      // h2load says nothing more when a server does not speak h2: its counts are the message.
      const counts = requests[0].slice('requests: '.length);
      if (protocol === null || protocol[1] !== expected) {
        reject(new Error(`h2load negotiated ${protocol === null ? 'no protocol' : protocol[1]}, not ${expected} (${counts})`));
      } else if (Number(requests[4]) === 0) {
        reject(new Error(`h2load got no 2xx response (${counts})`));
      } else {
        resolve(stdout);
      }
    });
  });
}

// The request times of h2load's log (start in µs since the epoch, status, µs to the end of the response) in ms, 2xx only.
function latencies(log) {
  const times = [];
  for (const line of log.split('\n')) {
    const [, status, micros] = line.split('\t');
    if (status !== undefined && status.startsWith('2')) times.push(Number(micros) / 1000);
  }
  return Float64Array.from(times).sort();
}

function percentile(sorted, fraction) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

// The last line that says something, for an error message.
function lastWords(text) {
  const lines = text.split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('progress:'));
  return lines.length === 0 ? '' : lines[lines.length - 1];
}
