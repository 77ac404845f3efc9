'use strict';

const net = require('node:net');
const { cpuDuring } = require('./proc-stats');

const WARMUP_SECONDS = 1;
const HEAD_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;
// A head longer than this is no answer of a file server: counted as an error.
const HEAD_LIMIT = 16 * 1024;

const kState = Symbol('kState');

/**
 * Downloads one path (or several, each connection taking them in turn from
 * its own first one) over and over on keep-alive connections, each GET sent
 * when the answer before it has ended, and counts answers and bytes; every
 * byte received counts, the last answers' cut off at the end too.
 * autocannon parses bodies in JavaScript and tops out near 45 MB/s on one
 * core here, far below what a file server sends: this reads the head, then
 * only counts the body's bytes (about 1 GB/s on one core). Answers must
 * carry a Content-Length (a file server's do). `WARMUP_SECONDS` of warm-up,
 * then `duration` seconds measured, the CPU time of `pids` read right
 * before and after.
 *
 * @param {object} options
 * @param {number} options.port at 127.0.0.1
 * @param {string} [options.path] the request target: `/100m.bin`
 * @param {string[]} [options.paths] several, in place of `path`: `/100k/0`, `/100k/1`...
 * @param {number} options.connections
 * @param {number} options.duration seconds
 * @param {number[]} options.pids the server's process tree
 * @returns {Promise<{rps: number, requests: number, bytes: number, errors: number, cpu: number | null}>}
 */
async function downloads({ port, path, paths = [path], connections, duration, pids }) {
  await download(port, paths, connections, WARMUP_SECONDS);
  const { value: totals, cpu } = await cpuDuring(pids, () => download(port, paths, connections, duration));
  return { rps: totals.requests / duration, requests: totals.requests, bytes: totals.bytes, errors: totals.errors, cpu };
}

module.exports = { downloads };

function download(port, paths, connections, seconds) {
  return new Promise((resolve) => {
    const totals = { requests: 0, bytes: 0, errors: 0 };
    const requests = paths.map((path) => Buffer.from(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
    const sockets = [];
    for (let i = 0; i < connections; i++) {
      // No delay: a GET waiting on Nagle for the ACK of the last one costs a delayed ACK (40 ms) per answer.
      const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
      socket[kState] = { totals, requests, next: i % requests.length, head: null, remaining: -1, ending: false };
      socket.on('connect', socketOnConnect);
      socket.on('data', socketOnData);
      socket.on('error', socketOnError);
      socket.on('close', socketOnClose);
      sockets.push(socket);
    }
    setTimeout(() => {
      for (const socket of sockets) {
        socket[kState].ending = true;
        socket.destroy();
      }
      resolve(totals);
    }, seconds * 1000);
  });
}

function socketOnConnect() {
  sendNext(this, this[kState]);
}

// remaining: -1 while a head is read, else the body's bytes still to come. An answer that is no
// 2xx with a Content-Length, or a head too long, closes the connection: an error.
function socketOnData(chunk) {
  const state = this[kState];
  state.totals.bytes += chunk.length;
  let at = 0;
  while (at < chunk.length) {
    if (state.remaining === -1) {
      const head = state.head === null ? chunk.subarray(at) : Buffer.concat([state.head, chunk.subarray(at)]);
      const end = head.indexOf(HEAD_END);
      if (end === -1) {
        if (head.length > HEAD_LIMIT) this.destroy();
        else state.head = Buffer.from(head);
        return;
      }
      const text = head.toString('latin1', 0, end);
      const length = CONTENT_LENGTH.exec(text);
      if (!/^HTTP\/1\.1 2\d\d /.test(text) || length === null) {
        this.destroy();
        return;
      }
      // What of the head was in this chunk: all of it but the part held from earlier ones.
      at += end + HEAD_END.length - (state.head === null ? 0 : state.head.length);
      state.head = null;
      state.remaining = Number(length[1]);
    }
    const take = Math.min(state.remaining, chunk.length - at);
    state.remaining -= take;
    at += take;
    if (state.remaining === 0) {
      state.remaining = -1;
      state.totals.requests++;
      sendNext(this, state);
    }
  }
}

function sendNext(socket, state) {
  socket.write(state.requests[state.next]);
  state.next = (state.next + 1) % state.requests.length;
}

// A connection lost or refused is counted as an error when it closes.
function socketOnError() {}

function socketOnClose() {
  if (!this[kState].ending) this[kState].totals.errors++;
}
