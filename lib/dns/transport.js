'use strict';

const dgram = require('node:dgram');
const net = require('node:net');
const { decodeMessage } = require('./message');

const DEFAULT_TIMEOUT_MS = 5000;
// A DNS message over TCP is 65535 bytes at most (its 2-byte length).
const MAX_TCP = 65535;

/**
 * Sends one DNS message to a server and reads its answer: over UDP, then
 * again over TCP when the answer comes truncated, or over TCP only
 * (`tcp: true`, as updates go). The answer must carry the request's id.
 *
 * @param {{host: string, port: number}} server
 * @param {Buffer} request an encoded message
 * @param {{tcp?: boolean, timeout?: number}} [options] timeout: ms for each attempt (5000)
 * @returns {Promise<{buffer: Buffer, message: import('./message').DnsMessage}>}
 * @throws {Error} a socket's error, a timeout (`code: 'ETIMEOUT'`), or an answer that does not read
 */
async function exchange(server, request, options = {}) {
  const timeout = options.timeout === undefined ? DEFAULT_TIMEOUT_MS : options.timeout;
  const id = request.readUInt16BE(0);
  if (options.tcp !== true) {
    const buffer = await overUdp(server, request, id, timeout);
    const message = decodeMessage(buffer);
    if (!message.flags.tc) return { buffer, message };
  }
  const buffer = await overTcp(server, request, timeout);
  const message = decodeMessage(buffer);
  if (message.id !== id) throw new Error(`${where(server)} answered another id (${message.id}, not ${id})`);
  return { buffer, message };
}

/**
 * @param {{host: string, port: number}} server
 * @returns {string} `host:port`, `[v6]:port`
 */
function where(server) {
  return net.isIPv6(server.host) ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`;
}

module.exports = { exchange, where };

function overUdp(server, request, id, timeout) {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4');
    const timer = setTimeout(() => finish(Object.assign(new Error(`${where(server)} did not answer within ${timeout} ms`), { code: 'ETIMEOUT' })), timeout);
    let done = false;
    // Once: a second close() of a dgram socket throws.
    function finish(err, buffer) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(buffer);
    }
    socket.on('error', (err) => finish(err));
    // Datagrams of another id (late answers, or spoofed) are not the answer.
    socket.on('message', (buffer, from) => {
      if (buffer.length >= 12 && buffer.readUInt16BE(0) === id && from.port === server.port) finish(null, buffer);
    });
    socket.connect(server.port, server.host, () => socket.send(request));
  });
}

function overTcp(server, request, timeout) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, server.host);
    const length = Buffer.alloc(2);
    length.writeUInt16BE(request.length, 0);
    let received = Buffer.alloc(0);
    let done = false;
    function finish(err, buffer) {
      if (done) return;
      done = true;
      socket.destroy();
      if (err) reject(err);
      else resolve(buffer);
    }
    socket.setTimeout(timeout, () => finish(Object.assign(new Error(`${where(server)} did not answer within ${timeout} ms`), { code: 'ETIMEOUT' })));
    socket.on('error', (err) => finish(err));
    socket.on('connect', () => socket.write(Buffer.concat([length, request])));
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (received.length > MAX_TCP + 2) finish(new Error(`${where(server)} sent more than one message`));
      else if (received.length >= 2 && received.length >= 2 + received.readUInt16BE(0)) finish(null, received.subarray(2, 2 + received.readUInt16BE(0)));
    });
    socket.on('end', () => finish(new Error(`${where(server)} closed the connection before its answer`)));
  });
}
