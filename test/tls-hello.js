'use strict';

// ClientHellos for the tests of readClientHello: the first record real clients send, and
// the framing of handshake bytes in TLS records. It loads nothing of lib/.

const net = require('node:net');
const tls = require('node:tls');
const { spawn } = require('node:child_process');
const { once } = require('node:events');

/**
 * Real clients whose ClientHello a test captures, each cleaned up through the
 * test file's own `onCleanup`.
 *
 * @param {(fn: () => unknown) => void} onCleanup registers a cleanup step
 * @returns {{captureHello: (connect: (port: number) => void) => Promise<Buffer>,
 *   nodeClient: (options: tls.ConnectionOptions) => void, opensslClient: (port: number, args: string[]) => void}}
 *   captureHello: the first TLS record that `connect(port)` makes a client send a plain server
 *   on 127.0.0.1:0, which then hangs up; nodeClient: Node's tls.connect to 127.0.0.1 with
 *   these options; opensslClient: `openssl s_client` to 127.0.0.1:port with these arguments
 */
function helloClients(onCleanup) {
  async function captureHello(connect) {
    const server = net.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onCleanup(() => new Promise((resolve) => server.close(resolve)));
    const received = new Promise((resolve, reject) => {
      server.once('connection', (socket) => {
        let bytes = Buffer.alloc(0);
        socket.on('data', (chunk) => {
          bytes = Buffer.concat([bytes, chunk]);
          if (bytes.length >= 5 && bytes.length >= 5 + bytes.readUInt16BE(3)) {
            resolve(bytes.subarray(0, 5 + bytes.readUInt16BE(3)));
            socket.destroy();
          }
        });
        socket.on('error', reject);
        socket.on('close', () => reject(new Error(`the client hung up after ${bytes.length} bytes`)));
      });
    });
    connect(server.address().port);
    return received;
  }

  function nodeClient(options) {
    const client = tls.connect({ host: '127.0.0.1', rejectUnauthorized: false, ...options });
    // The server hangs up mid-handshake: an error expected, not a failure.
    client.on('error', () => {});
    onCleanup(async () => {
      const closed = client.closed ? null : once(client, 'close');
      client.destroy();
      await closed;
    });
  }

  function opensslClient(port, args) {
    const child = spawn('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, ...args], { stdio: ['pipe', 'ignore', 'ignore'] });
    const exited = once(child, 'exit');
    onCleanup(async () => {
      child.stdin.end();
      child.kill();
      await exited;
    });
  }

  return { captureHello, nodeClient, opensslClient };
}

/**
 * Handshake bytes in TLS records of the given sizes.
 *
 * @param {Buffer} message
 * @param {number[]} [sizes] default: one record
 * @returns {Buffer}
 */
function frame(message, sizes = [message.length]) {
  const records = [];
  let from = 0;
  for (const size of sizes) {
    const header = Buffer.from([0x16, 3, 1, 0, 0]);
    header.writeUInt16BE(size, 3);
    records.push(header, message.subarray(from, from + size));
    from += size;
  }
  return Buffer.concat(records);
}

/**
 * Record sizes of `size` bytes each but the last, covering `length` bytes.
 *
 * @param {number} length
 * @param {number} size
 * @returns {number[]}
 */
function recordSizes(length, size) {
  const sizes = [];
  for (let left = length; left > 0; left -= size) sizes.push(Math.min(size, left));
  return sizes;
}

/**
 * @param {number} value
 * @returns {Buffer} the value as two bytes, big-endian
 */
function u16(value) {
  return Buffer.from([value >> 8, value & 0xff]);
}

module.exports = { helloClients, frame, recordSizes, u16 };
