'use strict';

const tls = require('node:tls');
const { cpuDuring } = require('./proc-stats');

const WARMUP_SECONDS = 1;
// A connection that has not finished by then counts as an error.
const CONNECTION_TIMEOUT_MS = 10000;
// Unused tickets kept for the next connections; more than `connections` never wait.
const MAX_TICKETS = 256;
const REQUEST = Buffer.from('GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');

/**
 * New TLS connections, one request each: `connections` clients, each
 * opening a connection, doing the handshake, sending `GET /` with
 * `Connection: close`, reading the response and waiting for the server to
 * close before it opens the next. `WARMUP_SECONDS` of that first (not
 * counted), then `duration` seconds measured, the CPU time of `pids` read
 * right before and after; connections still open at the end finish and count.
 *
 * autocannon (it calls `tls.connect` without a session) never resumes, and
 * wrk resumes about every other connection with no switch to stop it; this
 * client does either, always: with `resume`, every connection offers a ticket
 * the server issued to an earlier one (the freshest unused one, as a browser
 * uses each ticket once; the last one used again when none is left), without
 * it none. `resumed` says what the servers made of it.
 *
 * @param {object} options
 * @param {number} options.port at 127.0.0.1
 * @param {number} options.connections clients at once
 * @param {number} options.duration seconds
 * @param {boolean} options.resume offer a session ticket
 * @param {string} options.servername the SNI name every client sends
 * @param {number[]} options.pids the proxy's process tree; empty for none
 * @returns {Promise<{rps: number, requests: number, p50: number, p99: number, errors: number,
 *   cpu: number | null, resumed: number, negotiated: Object<string, number>}>} latencies in ms from
 *   the connect to the end of the response; `resumed` the share of connections resumed;
 *   `negotiated` counts connections by `<protocol> <cipher> <key exchange group>`
 */
async function handshakes({ port, connections, duration, resume, servername, pids }) {
  const tickets = { fresh: [], last: undefined };
  // Without one, tls.connect builds a context per connection, root certificates and all: most of a client's CPU.
  const secureContext = tls.createSecureContext();
  const settings = { port, connections, resume, servername, tickets, secureContext };
  await drive(settings, WARMUP_SECONDS);
  const { value: run, cpu } = await cpuDuring(pids, () => drive(settings, duration));
  const sorted = Float64Array.from(run.latencies).sort();
  const done = run.latencies.length;
  return {
    rps: done / run.seconds,
    requests: done,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    errors: run.errors,
    cpu,
    resumed: done === 0 ? 0 : run.resumed / done,
    negotiated: run.negotiated
  };
}

module.exports = { handshakes };

// `connections` clients in a loop until `seconds` have passed; resolves once the last has finished.
async function drive(settings, seconds) {
  const run = { latencies: [], errors: 0, resumed: 0, negotiated: {}, lastError: null };
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  const client = async () => {
    while (process.hrtime.bigint() < deadline) await connectOnce(settings, run);
  };
  await Promise.all(Array.from({ length: settings.connections }, client));
  if (run.latencies.length === 0 && run.lastError !== null) throw new Error(`no connection succeeded: ${run.lastError}`);
  return { ...run, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}

// One connection: resolves when the server has closed it (or it failed), never rejects.
function connectOnce({ port, resume, servername, tickets, secureContext }, run) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const session = resume ? takeTicket(tickets) : undefined;
    const socket = tls.connect({ host: '127.0.0.1', port, servername, session, secureContext, rejectUnauthorized: false });
    let received = '';
    let answered = false;
    const fail = (err) => {
      if (!answered) {
        run.errors++;
        run.lastError = err.message;
      }
      answered = true;
      socket.destroy();
    };
    socket.setNoDelay(true);
    socket.setTimeout(CONNECTION_TIMEOUT_MS, () => fail(new Error(`not done within ${CONNECTION_TIMEOUT_MS} ms`)));
    if (resume) socket.on('session', (ticket) => keepTicket(tickets, ticket));
    socket.once('secureConnect', () => socket.write(REQUEST));
    socket.on('data', (chunk) => {
      if (answered) return;
      received += chunk.toString('latin1');
      const status = responseStatus(received);
      if (status === null) return;
      answered = true;
      if (status < 200 || status >= 300) {
        run.errors++;
        run.lastError = `status ${status}`;
        return;
      }
      run.latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (socket.isSessionReused()) run.resumed++;
      const group = socket.getEphemeralKeyInfo();
      const what = `${socket.getProtocol()} ${socket.getCipher().standardName} ${group.name || group.type || '-'}`;
      run.negotiated[what] = (run.negotiated[what] || 0) + 1;
    });
    socket.on('end', () => {
      if (!answered) fail(new Error('closed before the response'));
    });
    socket.on('error', fail);
    socket.once('close', resolve);
  });
}

function takeTicket(tickets) {
  const ticket = tickets.fresh.pop();
  if (ticket !== undefined) tickets.last = ticket;
  return tickets.last;
}

function keepTicket(tickets, ticket) {
  tickets.fresh.push(ticket);
  if (tickets.fresh.length > MAX_TICKETS) tickets.fresh.shift();
}

// The status once the whole response is in; the backends answer with Content-Length.
function responseStatus(text) {
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const head = text.slice(0, end);
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length === null || text.length - end - 4 < Number(length[1])) return null;
  return Number(head.slice(9, 12));
}

function percentile(sorted, fraction) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}
