'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const { execFile, spawn } = require('node:child_process');
const { once } = require('node:events');
const path = require('node:path');
const { promisify } = require('node:util');
const { createProxy, Logger } = require('../lib');

const LILA = path.join(__dirname, '..', 'lila');
const HEAP_PROBE = path.join(__dirname, 'fixtures', 'heap-probe.js');
// Text or JSON, with or without " from <hosts file>".
const STARTUP_LINE = /^(?:lila: |\{.*"msg":")(\S+) \((\S+)\) listening on (\S+) -> (\d+) servers?[^\n]*\n/m;
const cleanups = [];

/**
 * Registers a cleanup step; `cleanup()` runs them newest first.
 *
 * @param {() => unknown} fn
 */
function onCleanup(fn) {
  cleanups.push(fn);
}

/** Runs every registered cleanup step; use as `afterEach(cleanup)`. */
async function cleanup() {
  while (cleanups.length > 0) await cleanups.pop()();
}

/**
 * Starts an http backend on 127.0.0.1:0. By default it answers every
 * request with its name; `handler` replaces that.
 *
 * @param {string} name
 * @param {http.RequestListener} [handler]
 * @returns {Promise<http.Server & {name: string, port: number, address: string}>}
 */
async function startHttpBackend(name, handler) {
  const server = http.createServer();
  // A client that goes away mid-request makes the request emit 'error'.
  server.on('request', (req) => req.on('error', () => {}));
  server.on('request', handler || ((req, res) => {
    req.resume();
    res.end(name);
  }));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => closeHttpServer(server));
  return Object.assign(server, { name, port: server.address().port, address: `127.0.0.1:${server.address().port}` });
}

/**
 * Starts a tcp backend on 127.0.0.1:0. By default it writes its name and
 * closes; `onConnection` replaces that. Its sockets are destroyed on cleanup.
 *
 * @param {string} name
 * @param {(socket: net.Socket) => void} [onConnection]
 * @param {{allowHalfOpen?: boolean}} [options] allowHalfOpen: answer after the client half-closed
 * @returns {Promise<net.Server & {name: string, port: number, address: string, sockets: Set<net.Socket>}>}
 */
async function startTcpBackend(name, onConnection, options = {}) {
  const sockets = new Set();
  const server = net.createServer({ allowHalfOpen: options.allowHalfOpen === true }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    if (onConnection) onConnection(socket);
    else socket.end(name);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return Object.assign(server, { name, sockets, port: server.address().port, address: `127.0.0.1:${server.address().port}` });
}

/**
 * Starts lila in this process on 127.0.0.1:0, logging nothing.
 *
 * @param {object} options as for `createProxy`
 * @returns {Promise<import('../lib/proxy') & {port: number, url: string}>}
 */
async function startProxy(options) {
  const proxy = createProxy({ logger: new Logger({ level: 'silent' }), ...options });
  const clients = new Set();
  proxy.listener.server.on('connection', (socket) => {
    clients.add(socket);
    socket.on('close', () => clients.delete(socket));
  });
  const address = await proxy.listen(0, '127.0.0.1');
  onCleanup(() => {
    // close() waits for open connections; a failed test may leave some.
    for (const socket of clients) socket.destroy();
    return proxy.close();
  });
  return Object.assign(proxy, { port: address.port, url: `http://127.0.0.1:${address.port}` });
}

/**
 * A port on 127.0.0.1 where nothing listens, free for a server to take:
 * connects to it are refused.
 *
 * @returns {Promise<number>}
 */
async function refusingPort() {
  const [port] = await freePorts(1);
  return port;
}

/**
 * A port on 127.0.0.1 that a listener of the test holds until cleanup:
 * listening on it fails with EADDRINUSE.
 *
 * @returns {Promise<number>}
 */
async function takenPort() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => new Promise((resolve) => server.close(resolve)));
  return server.address().port;
}

/**
 * An address where connects neither succeed nor fail: a listener in a
 * stopped child process, its accept queue full, so the kernel drops new SYNs
 * and a connect stays pending until the connecting side gives up.
 *
 * @returns {Promise<string>} `127.0.0.1:<port>`
 */
async function blackHoleAddress() {
  const child = spawn(process.execPath, ['-e', `
    const server = require('node:net').createServer();
    server.listen({ host: '127.0.0.1', port: 0, backlog: 1 }, () => console.log(server.address().port));
  `], { stdio: ['ignore', 'pipe', 'inherit'] });
  onCleanup(() => {
    child.kill('SIGKILL');
    return once(child, 'exit');
  });
  const [data] = await once(child.stdout, 'data');
  const port = Number(data);
  child.kill('SIGSTOP');
  // Two connections fill a backlog of 1; they stay in the kernel's queue.
  const fillers = [];
  for (let i = 0; i < 2; i++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    fillers.push(once(socket, 'connect'));
    onCleanup(() => socket.destroy());
  }
  await Promise.all(fillers);
  return `127.0.0.1:${port}`;
}

/**
 * Writes raw bytes to a port and collects every byte received until the
 * other side closes the connection.
 *
 * @param {number} port
 * @param {string | Buffer} bytes
 * @returns {Promise<string>}
 */
async function rawRequest(port, bytes) {
  const socket = net.connect(port, '127.0.0.1');
  onCleanup(() => socket.destroy());
  socket.on('error', () => {});
  socket.write(bytes);
  return (await collect(socket)).toString('latin1');
}

/**
 * Writes raw bytes to lila on a connection of their own and collects its
 * answer until lila closes the connection, or for at most `withinMs`.
 *
 * @param {number} port
 * @param {string} bytes one byte per character (latin1)
 * @param {number} withinMs a bound, not a wait: lila is expected to close well before it
 * @returns {Promise<{received: string, closed: boolean}>} closed: by lila, within the bound
 */
function rawExchange(port, bytes, withinMs) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    const chunks = [];
    let closed = false;
    const timer = setTimeout(() => socket.destroy(), withinMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => { closed = true; });
    // A reset, when lila closes with bytes of ours unread, closes as well.
    socket.on('error', () => { closed = true; });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ received: Buffer.concat(chunks).toString('latin1'), closed });
    });
    socket.write(Buffer.from(bytes, 'latin1'));
  });
}

/**
 * Sends a request head on a connection of its own and resolves with the
 * response head that comes back (the connection is then closed).
 *
 * @param {number} port
 * @param {string} head
 * @returns {Promise<string>}
 */
function responseHead(port, head) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    onCleanup(() => socket.destroy());
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (text) => {
      received += text;
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.destroy();
      resolve(received.slice(0, end + 2));
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`closed before a response head: ${JSON.stringify(received)}`)));
    socket.write(head);
  });
}

/**
 * Sends one http request and collects the whole response.
 *
 * @param {number} port
 * @param {http.RequestOptions & {body?: Buffer | string}} [options]
 * @returns {Promise<{status: number, headers: http.IncomingHttpHeaders, rawHeaders: string[], body: string, socket: net.Socket}>}
 */
function request(port, options = {}) {
  return new Promise((resolve, reject) => {
    const { body, ...rest } = options;
    const req = http.request({ host: '127.0.0.1', port, ...rest }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => resolve({
        status: res.statusCode,
        headers: res.headers,
        rawHeaders: res.rawHeaders,
        body: Buffer.concat(chunks).toString(),
        socket: req.socket
      }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Resolves once `predicate()` holds, checking after every turn of the event
 * loop; for state that changes on events the test cannot see, like a counter
 * released when lila's upstream socket closes.
 *
 * @param {() => boolean} predicate
 * @param {string} what described in the failure message
 */
async function until(predicate, what) {
  const deadline = Date.now() + 5000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise(setImmediate);
  }
}

/**
 * A promise and the function that resolves it, for events inside handlers.
 *
 * @returns {{promise: Promise<any>, resolve: (value?: any) => void}}
 */
function deferred() {
  let resolve;
  const promise = new Promise((res) => { resolve = res; });
  return { promise, resolve };
}

/**
 * The active count of every backend of a proxy, in order.
 *
 * @param {import('../lib/proxy')} proxy
 * @returns {number[]}
 */
function activeCounts(proxy) {
  return proxy.backends.map((backend) => backend.active);
}

/**
 * @param {Buffer} data
 * @returns {string} hex sha256
 */
function sha256(data) {
  return crypto.createHash('sha256').update(data).digest('hex');
}

/**
 * Collects a readable stream into one Buffer. The async iteration destroys
 * the stream at its end; see `untilEnd` for a socket that must stay writable.
 *
 * @param {import('node:stream').Readable} stream
 * @returns {Promise<Buffer>}
 */
async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * Collects what a socket receives until its 'end', leaving its write side open.
 *
 * @param {net.Socket} socket
 * @returns {Promise<Buffer>}
 */
function untilEnd(socket) {
  const chunks = [];
  socket.on('data', (chunk) => chunks.push(chunk));
  return once(socket, 'end').then(() => Buffer.concat(chunks));
}

/**
 * Reads HTTP/1.x responses off a raw client socket, in order: `head()` reads
 * the next final head (interim 1xx heads are kept in its `interim`), and
 * `body(head, method)` its body, framed by chunked (trailers are kept in
 * `head.trailers`), Content-Length or the end of the connection, none after
 * HEAD, 204 and 304; `response(method)` reads both. What follows stays unread.
 *
 * @param {net.Socket} socket
 */
function responseReader(socket) {
  let buffered = Buffer.alloc(0);
  let ended = false;
  let wake = () => {};
  socket.on('data', (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    wake();
  });
  const onEnd = () => {
    ended = true;
    wake();
  };
  socket.on('end', onEnd);
  socket.on('close', onEnd);

  async function waitFor(ready) {
    while (!ready()) {
      if (ended) {
        const unread = buffered.length > 0 ? ` with ${JSON.stringify(buffered.toString('latin1').slice(0, 80))} unread` : '';
        throw new Error(`the connection ended${unread}`);
      }
      await new Promise((resolve) => { wake = resolve; });
    }
  }
  function take(length) {
    const out = buffered.subarray(0, length);
    buffered = buffered.subarray(length);
    return out;
  }
  async function line() {
    await waitFor(() => buffered.includes('\r\n'));
    return take(buffered.indexOf('\r\n') + 2).toString('latin1').slice(0, -2);
  }
  async function fields() {
    const out = [];
    for (let field; (field = await line()) !== '';) {
      const colon = field.indexOf(':');
      out.push([field.slice(0, colon), field.slice(colon + 1).trim()]);
    }
    return out;
  }

  async function head() {
    const interim = [];
    for (;;) {
      const statusLine = await line();
      const match = /^(HTTP\/\d\.\d) (\d{3}) ?(.*)$/.exec(statusLine);
      if (match === null) throw new Error(`not a status line: ${JSON.stringify(statusLine)}`);
      const list = await fields();
      const status = Number(match[2]);
      if (status < 200) {
        interim.push(statusLine);
        continue;
      }
      // By lowercase name, repeated fields joined by ", ".
      const headers = {};
      for (const [name, value] of list) {
        const lower = name.toLowerCase();
        headers[lower] = headers[lower] === undefined ? value : `${headers[lower]}, ${value}`;
      }
      return { statusLine, version: match[1], status, reason: match[3], interim, fields: list, headers, framing: 'none', trailers: [] };
    }
  }

  async function body(response, method) {
    const { status, headers } = response;
    if (method === 'HEAD' || status === 204 || status === 304) return Buffer.alloc(0);
    const transferEncoding = headers['transfer-encoding'];
    if (transferEncoding !== undefined && /(?:^|,)\s*chunked\s*$/i.test(transferEncoding)) {
      const chunks = [];
      for (let size; (size = parseInt(await line(), 16)) > 0;) {
        await waitFor(() => buffered.length >= size + 2);
        chunks.push(take(size));
        take(2);
      }
      response.framing = 'chunked';
      response.trailers = await fields();
      return Buffer.concat(chunks);
    }
    if (transferEncoding === undefined && headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      await waitFor(() => buffered.length >= length);
      response.framing = 'length';
      return take(length);
    }
    await waitFor(() => ended);
    response.framing = 'close';
    return take(buffered.length);
  }

  return {
    head,
    body,
    async response(method) {
      const response = await head();
      response.body = await body(response, method);
      return response;
    }
  };
}

/**
 * A seeded generator (mulberry32): the same seed, the same sequence.
 *
 * @param {number} seed
 * @returns {(n: number) => number} an integer from 0 to n - 1
 */
function prng(seed) {
  let state = seed >>> 0;
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * n);
  };
}

// Ports handed out are taken below the kernel's ephemeral range: a port found free there is
// free until it is used, whereas one the kernel picked for a listen(0) may be taken meanwhile by
// any outgoing connection (lila's own to a CA, Pebble's, a backend's), as CI saw once.
const EPHEMERAL_FIRST = ephemeralFirst();
const handedOut = new Set();

function ephemeralFirst() {
  try {
    return Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

/**
 * Ports on 127.0.0.1 where nothing listens, each another: held at once while they are found,
 * and never handed out twice by one test process.
 *
 * @param {number} count
 * @returns {Promise<number[]>}
 */
async function freePorts(count) {
  const servers = [];
  const low = Math.max(1024, Math.min(10000, EPHEMERAL_FIRST - 4000));
  const span = EPHEMERAL_FIRST - low;
  while (servers.length < count) {
    // Where the ephemeral range leaves no room below it, the kernel picks.
    const port = span >= 1000 ? low + Math.floor(Math.random() * span) : 0;
    if (handedOut.has(port)) continue;
    if (port) handedOut.add(port);
    const server = net.createServer();
    const listening = await new Promise((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (listening) servers.push(server);
  }
  const ports = servers.map((server) => server.address().port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/**
 * A tcp listener on 127.0.0.1:`port` in front of others: each connection's first bytes are
 * read, and `route(firstText, socket)` says where it goes — a port on 127.0.0.1, its bytes
 * relayed both ways — or null, when the route has dealt with the socket itself. Closed, with
 * every connection, at cleanup.
 *
 * @param {number} port
 * @param {(first: string, socket: net.Socket) => Promise<number | null>} route
 * @returns {Promise<void>}
 */
async function tcpFront(port, route) {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.once('data', async (first) => {
      socket.pause();
      const to = await route(first.toString('latin1'), socket);
      if (to === null) return;
      const upstream = net.connect(to, '127.0.0.1');
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.on('error', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      upstream.write(first);
      socket.pipe(upstream).pipe(socket);
      socket.resume();
    });
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
}

module.exports = {
  freePorts,
  tcpFront,
  prng,
  onCleanup,
  responseReader,
  cleanup,
  startHttpBackend,
  startTcpBackend,
  startProxy,
  refusingPort,
  takenPort,
  blackHoleAddress,
  rawRequest,
  rawExchange,
  responseHead,
  request,
  until,
  deferred,
  activeCounts,
  sha256,
  collect,
  untilEnd,
  spawnLila,
  runLila,
  startLila,
  nextLine,
  untilWritten,
  liveObjects,
  keepAliveAgent,
  workerPids,
  listeningSockets,
  holdsListeningSocket,
  holdsConnection
};

/**
 * Spawns the real `lila` executable; its cleanup kills it if it still runs
 * and waits until it has exited.
 *
 * @param {string[]} args
 * @param {{cwd?: string, program?: string, heapProbe?: boolean, env?: Record<string, string | undefined>}} [options]
 *   cwd: where relative paths in args start; program: a node program to run instead of lila; heapProbe: with
 *   test/fixtures/heap-probe.js, for `liveObjects()`; env: variables set (or, undefined, removed) for lila
 * @returns {{child: import('node:child_process').ChildProcess, stdout: string, stderr: string,
 *   closed: Promise<{code: number | null, signal: string | null}>}}
 */
function spawnLila(args, options = {}) {
  const program = options.program === undefined ? LILA : options.program;
  const nodeArgs = options.heapProbe === true ? ['--expose-gc', '--require', HEAP_PROBE] : [];
  const stdio = ['ignore', 'pipe', 'pipe'];
  if (options.heapProbe === true) stdio.push('ipc');
  const env = options.env === undefined ? undefined : withVariables(options.env);
  const child = spawn(process.execPath, [...nodeArgs, program, ...args], { cwd: options.cwd, stdio, env });
  const lila = { child, stdout: '', stderr: '', closed: null };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (text) => { lila.stdout += text; });
  child.stderr.on('data', (text) => { lila.stderr += text; });
  lila.closed = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return lila.closed.catch(() => {});
  });
  return lila;
}

/**
 * Runs lila to its end.
 *
 * @param {string[]} args
 * @param {{cwd?: string, program?: string, heapProbe?: boolean, env?: Record<string, string | undefined>}} [options] as for spawnLila
 * @returns {Promise<{code: number | null, signal: string | null, stdout: string, stderr: string}>}
 */
async function runLila(args, options) {
  const lila = spawnLila(args, options);
  const { code, signal } = await lila.closed;
  return { code, signal, stdout: lila.stdout, stderr: lila.stderr };
}

/**
 * Starts lila and resolves once it has printed its startup line; rejects,
 * with what it printed, if it exits first.
 *
 * @param {string[]} args
 * @param {{cwd?: string, program?: string, heapProbe?: boolean, env?: Record<string, string | undefined>}} [options] as for spawnLila
 * @returns {Promise<ReturnType<typeof spawnLila> & {line: string, mode: string, layer: string,
 *   host: string, port: number, count: number}>}
 */
async function startLila(args, options) {
  const lila = spawnLila(args, options);
  await new Promise((resolve, reject) => {
    const onData = () => {
      if (!STARTUP_LINE.test(lila.stderr)) return;
      lila.child.stderr.removeListener('data', onData);
      resolve();
    };
    lila.child.stderr.on('data', onData);
    lila.closed.then(({ code, signal }) => {
      reject(new Error(`lila ${args.join(' ')} exited (code ${code}, signal ${signal}) ` +
        `before it was listening; stderr:\n${lila.stderr}`));
    }, reject);
  });
  const [line, mode, layer, where, count] = STARTUP_LINE.exec(lila.stderr);
  const colon = where.lastIndexOf(':');
  return Object.assign(lila, {
    line: line.slice(0, -1),
    mode,
    layer,
    host: where.slice(0, colon),
    port: Number(where.slice(colon + 1)),
    count: Number(count)
  });
}

/**
 * Resolves with the first whole line matching `pattern` that lila writes
 * from now on, and when the test saw it; rejects after `ms` or if lila exits.
 * Call it before sending what makes lila write the line.
 *
 * @param {Awaited<ReturnType<typeof startLila>>} lila
 * @param {RegExp} pattern without flags, anchored by this function at both ends of a line
 * @param {number} [ms]
 * @returns {Promise<{line: string, at: number}>}
 */
function nextLine(lila, pattern, ms = 3000) {
  const from = lila.stderr.length;
  const whole = new RegExp(`^${pattern.source}\\n`, 'm');
  return untilWritten(lila, () => {
    const match = whole.exec(lila.stderr.slice(from));
    return match === null ? null : { line: match[0].slice(0, -1), at: performance.now() };
  }, `line matching ${pattern}`, ms);
}

/**
 * Resolves with what `find()` returns once it is neither null nor undefined,
 * asked now and each time lila writes to stderr; rejects after `ms`, or if lila
 * exits first.
 *
 * @template T
 * @param {ReturnType<typeof spawnLila>} lila
 * @param {() => T | null | undefined} find reads `lila.stderr`
 * @param {string} what what `find` looks for, for the failure messages: `line matching /x/`
 * @param {number} ms
 * @returns {Promise<T>}
 */
function untilWritten(lila, find, what, ms) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`no ${what} within ${ms} ms; lila's stderr:\n${lila.stderr}`));
    }, ms);
    const onData = () => {
      const found = find();
      if (found === null || found === undefined) return;
      finish();
      resolve(found);
    };
    const onClose = () => {
      finish();
      reject(new Error(`lila exited before writing any ${what}; stderr:\n${lila.stderr}`));
    };
    const finish = () => {
      clearTimeout(timer);
      lila.child.stderr.removeListener('data', onData);
      lila.child.removeListener('close', onClose);
    };
    lila.child.stderr.on('data', onData);
    lila.child.once('close', onClose);
    onData();
  });
}

/**
 * What a lila started with `heapProbe` still holds after a garbage collection.
 *
 * @param {ReturnType<typeof spawnLila>} lila
 * @returns {Promise<{heapUsed: number, arrayBuffers: number, sockets: number, sessions: number, streams: number}>}
 *   arrayBuffers: the bytes of Buffers (outside the heap); sockets: net.Socket (TLS ones included); sessions and
 *   streams: HTTP/2's, both sides
 */
function liveObjects(lila) {
  return new Promise((resolve, reject) => {
    const onClose = () => reject(new Error(`lila exited before it answered; stderr:\n${lila.stderr}`));
    lila.child.once('close', onClose);
    lila.child.once('message', (message) => {
      lila.child.removeListener('close', onClose);
      resolve(message);
    });
    lila.child.send('heap');
  });
}

/**
 * A keep-alive client agent, destroyed on cleanup.
 *
 * @param {number} [maxSockets] default 1: requests share one connection in turn
 * @returns {http.Agent}
 */
function keepAliveAgent(maxSockets = 1) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  onCleanup(() => agent.destroy());
  return agent;
}

/**
 * The worker processes of a lila primary.
 *
 * @param {ReturnType<typeof spawnLila>} lila
 * @returns {Promise<number[]>} their pids, sorted
 */
async function workerPids(lila) {
  try {
    const { stdout } = await promisify(execFile)('pgrep', ['-P', String(lila.child.pid)]);
    return stdout.trim().split('\n').filter(Boolean).map(Number).sort();
  } catch {
    return [];
  }
}

/**
 * How many sockets listen on 127.0.0.1:port, from the kernel's own table (Linux).
 *
 * @param {number} port
 * @returns {number}
 */
function listeningSockets(port) {
  return socketInodes(port, null, '0A').size;
}

/**
 * Whether a process holds a socket listening on 127.0.0.1:port (its own, or one it was handed).
 *
 * @param {number} pid
 * @param {number} port
 * @returns {boolean}
 */
function holdsListeningSocket(pid, port) {
  return holdsSocket(pid, socketInodes(port, null, '0A'));
}

/**
 * Whether a process holds the server's end of the connection from
 * 127.0.0.1:clientPort to 127.0.0.1:port.
 *
 * @param {number} pid
 * @param {number} port
 * @param {number} clientPort
 * @returns {boolean}
 */
function holdsConnection(pid, port, clientPort) {
  return holdsSocket(pid, socketInodes(port, clientPort, '01'));
}

function closeHttpServer(server) {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
}

// The inodes of 127.0.0.1 TCP sockets, from the kernel's table: `local` and `remote` ports, `state` in hex (0A listen, 01 established).
function socketInodes(localPort, remotePort, state) {
  const hex = (port) => `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return new Set(fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1] === hex(localPort) && fields[3] === state && (remotePort === null || fields[2] === hex(remotePort)))
    .map((fields) => `socket:[${fields[9]}]`));
}

function holdsSocket(pid, inodes) {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return inodes.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

// The test's environment with `variables` set, or removed where undefined.
function withVariables(variables) {
  const env = { ...process.env, ...variables };
  for (const [name, value] of Object.entries(variables)) if (value === undefined) delete env[name];
  return env;
}
