'use strict';

const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');
const { cleanup, onCleanup, deferred, refusingPort, startLila } = require('./helpers');
const { connectH2, within } = require('./h2');

// Messages are JSON: no proto files needed.
const toJson = (value) => Buffer.from(JSON.stringify(value));
const fromJson = (buffer) => JSON.parse(buffer.toString());

function method(name, requestStream, responseStream) {
  return {
    path: `/lila.test.Echo/${name}`,
    requestStream,
    responseStream,
    requestSerialize: toJson,
    requestDeserialize: fromJson,
    responseSerialize: toJson,
    responseDeserialize: fromJson
  };
}

const ECHO = {
  unary: method('Unary', false, false),
  serverStream: method('ServerStream', false, true),
  clientStream: method('ClientStream', true, false),
  bidi: method('Bidi', true, true),
  fail: method('Fail', false, false),
  hang: method('Hang', false, false)
};
const EchoClient = grpc.makeGenericClientConstructor(ECHO, 'Echo');

// Trailing metadata naming the server, as a server sends at the end of a call.
function trailerOf(name) {
  const metadata = new grpc.Metadata();
  metadata.set('x-served-by', name);
  return metadata;
}

/**
 * Starts a gRPC server on 127.0.0.1:0 that answers with its name: Unary
 * echoes, ServerStream sends three messages, ClientStream and Bidi echo what
 * they get, each with `x-served-by` trailing metadata; Fail answers NOT_FOUND;
 * Hang never answers. Shut down on cleanup.
 */
async function startGrpcServer(name, overrides = {}) {
  const server = new grpc.Server();
  const state = { name, server, served: 0, hung: [] };
  server.addService(ECHO, {
    unary(call, callback) {
      state.served++;
      callback(null, { name, echo: call.request }, trailerOf(name));
    },
    serverStream(call) {
      for (let i = 0; i < 3; i++) call.write({ name, i, echo: call.request });
      call.end(trailerOf(name));
    },
    clientStream(call, callback) {
      const received = [];
      call.on('data', (message) => received.push(message));
      call.on('end', () => callback(null, { name, received }, trailerOf(name)));
    },
    bidi(call) {
      call.on('data', (message) => call.write({ name, echo: message }));
      call.on('end', () => call.end(trailerOf(name)));
    },
    fail(call, callback) {
      callback({ code: grpc.status.NOT_FOUND, details: `${name} has no ${call.request.what}` });
    },
    hang(call) {
      state.hung.push(call);
    },
    ...overrides
  });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  onCleanup(() => server.forceShutdown());
  return Object.assign(state, { port, address: `127.0.0.1:${port}` });
}

// A grpc-js client of lila's plain port (h2c with prior knowledge).
function echoClient(port) {
  const client = new EchoClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  onCleanup(() => client.close());
  return client;
}

// One unary call: its status code, details and response (code 0 is OK).
function unary(client, name, request, options = {}) {
  return new Promise((resolve) => {
    client[name](request, new grpc.Metadata(), options, (err, response) => {
      if (err) resolve({ code: err.code, details: err.details, response: null });
      else resolve({ code: grpc.status.OK, details: null, response });
    });
  });
}

// The real lila balancing round-robin in the http layer on 127.0.0.1:0.
function startBalancer(servers, options = []) {
  return startLila(['round-robin', '--layer', 'http', '-a', '127.0.0.1', '-p', '0', ...servers, ...options]);
}

// A unary gRPC call sent with Node's http2 client, to see lila's answer as
// it is on the wire: its head and its trailers (none for trailers-only).
async function rawGrpcCall(port, path) {
  const session = await connectH2(`http://127.0.0.1:${port}`);
  const message = toJson({});
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
  let head = null;
  let trailers = null;
  let body = '';
  stream.on('response', (headers) => { head = headers; });
  stream.on('trailers', (headers) => { trailers = headers; });
  stream.setEncoding('latin1');
  stream.on('data', (text) => { body += text; });
  await new Promise((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
    stream.end(frame);
  });
  // In a trailers-only answer, grpc-status is in the head.
  const last = trailers || head;
  return { head, trailers, body, grpcStatus: last['grpc-status'], grpcMessage: last['grpc-message'] };
}

describe('gRPC through lila', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it('balances 1 000 unary calls of one channel evenly over three servers', async () => {
    const servers = await Promise.all(['A', 'B', 'C'].map((name) => startGrpcServer(name)));
    const lila = await startBalancer(servers.map((s) => `${s.address},h2`));
    const client = echoClient(lila.port);

    const calls = await Promise.all(Array.from({ length: 1000 }, (_, i) => unary(client, 'unary', { i })));

    assert.deepEqual(calls.filter((c) => c.code !== grpc.status.OK), []);
    calls.forEach((c, i) => assert.deepEqual(c.response.echo, { i }));
    const byName = { A: 0, B: 0, C: 0 };
    for (const c of calls) byName[c.response.name]++;
    for (const server of servers) {
      assert.equal(byName[server.name], server.served);
      assert.ok(server.served >= 300 && server.served <= 366, `${server.name} served ${server.served} of 1000`);
    }
  });

  it('passes a server-streaming, a client-streaming and a bidi call with their messages and trailers', async () => {
    const server = await startGrpcServer('A');
    const lila = await startBalancer([`${server.address},h2`]);
    const client = echoClient(lila.port);

    const serverStream = client.serverStream({ hello: 1 });
    const streamed = [];
    serverStream.on('data', (message) => streamed.push(message));
    const [streamStatus] = await Promise.all([new Promise((resolve) => serverStream.on('status', resolve)), new Promise((resolve) => serverStream.on('end', resolve))]);

    const clientStatus = deferred();
    const clientAnswer = deferred();
    const clientStream = client.clientStream((err, response) => clientAnswer.resolve({ err, response }));
    clientStream.on('status', clientStatus.resolve);
    clientStream.write({ n: 1 });
    clientStream.write({ n: 2 });
    clientStream.end();
    const { err, response } = await clientAnswer.promise;
    const clientStreamStatus = await clientStatus.promise;

    const bidi = client.bidi();
    const echoed = [];
    bidi.on('data', (message) => {
      echoed.push(message);
      if (echoed.length < 3) bidi.write({ n: echoed.length + 1 });
      else bidi.end();
    });
    const bidiStatus = new Promise((resolve) => bidi.on('status', resolve));
    bidi.write({ n: 1 });
    const bidiFinal = await bidiStatus;

    assert.deepEqual(streamed, [0, 1, 2].map((i) => ({ name: 'A', i, echo: { hello: 1 } })));
    assert.equal(streamStatus.code, grpc.status.OK);
    assert.deepEqual(streamStatus.metadata.get('x-served-by'), ['A']);

    assert.equal(err, null);
    assert.deepEqual(response, { name: 'A', received: [{ n: 1 }, { n: 2 }] });
    assert.equal(clientStreamStatus.code, grpc.status.OK);
    assert.deepEqual(clientStreamStatus.metadata.get('x-served-by'), ['A']);

    assert.deepEqual(echoed, [1, 2, 3].map((n) => ({ name: 'A', echo: { n } })));
    assert.equal(bidiFinal.code, grpc.status.OK);
    assert.deepEqual(bidiFinal.metadata.get('x-served-by'), ['A']);
  });

  it('passes a server\'s error status and message to the client', async () => {
    const server = await startGrpcServer('A');
    const lila = await startBalancer([`${server.address},h2`]);
    const client = echoClient(lila.port);

    const call = await unary(client, 'fail', { what: 'such thing' });

    assert.deepEqual([call.code, call.details], [grpc.status.NOT_FOUND, 'A has no such thing']);
  });

  it('fails calls over from a killed server, or answers UNAVAILABLE, never a non-gRPC error', async () => {
    const servers = await Promise.all(['A', 'B', 'C'].map((name) => startGrpcServer(name)));
    const lila = await startBalancer(servers.map((s) => `${s.address},h2`));
    const client = echoClient(lila.port);
    const warm = [];
    for (let i = 0; i < 3; i++) warm.push(await unary(client, 'unary', { warm: i }));
    assert.deepEqual(warm.map((c) => c.response && c.response.name), ['A', 'B', 'C']);

    servers[1].server.forceShutdown();
    const calls = [];
    for (let i = 0; i < 30; i++) calls.push(await unary(client, 'unary', { i }));

    const codes = new Set(calls.map((c) => c.code));
    const ok = calls.filter((c) => c.code === grpc.status.OK);
    assert.deepEqual([...codes].filter((code) => code !== grpc.status.OK && code !== grpc.status.UNAVAILABLE), [],
      JSON.stringify(calls.filter((c) => c.code !== grpc.status.OK)));
    for (const c of calls) {
      if (c.code === grpc.status.UNAVAILABLE) assert.doesNotMatch(c.details, /Received HTTP status code|Protocol error/, c.details);
    }
    assert.ok(ok.length > 0, 'no call succeeded');
    assert.ok(ok.every((c) => c.response.name !== 'B'), 'the killed server answered');
    assert.equal(servers[1].served, 1);
    assert.equal(servers[0].served + servers[2].served, 2 + ok.length);
  });

  it('propagates the client\'s deadline to the server', async () => {
    const cancelled = deferred();
    let deadline = null;
    const server = await startGrpcServer('A', {
      hang(call) {
        deadline = call.getDeadline();
        call.on('cancelled', () => cancelled.resolve());
      }
    });
    const lila = await startBalancer([`${server.address},h2`]);
    const client = echoClient(lila.port);

    const sent = Date.now();
    // A second: long enough to reach the server on a busy machine, as a deadline must.
    const call = await unary(client, 'hang', {}, { deadline: sent + 1000 });
    await within(cancelled.promise, 5000, 'the server\'s call is cancelled');

    assert.equal(call.code, grpc.status.DEADLINE_EXCEEDED);
    // A Date or milliseconds since the epoch; Infinity without grpc-timeout.
    const at = deadline instanceof Date ? deadline.getTime() : deadline;
    assert.ok(Number.isFinite(at), `the server's call has no deadline: ${deadline}`);
    const left = at - sent;
    assert.ok(left > 0 && left <= 2000, `the server's deadline is ${left} ms after the call was sent`);
  });

  it('answers UNAVAILABLE in gRPC\'s terms when no server can be reached', async () => {
    const ports = [await refusingPort(), await refusingPort()];
    const lila = await startBalancer(ports.map((port) => `127.0.0.1:${port},h2`));
    const client = echoClient(lila.port);

    const call = await unary(client, 'unary', {});
    const raw = await rawGrpcCall(lila.port, ECHO.unary.path);

    assert.equal(call.code, grpc.status.UNAVAILABLE);
    assert.ok(call.details.length > 0, 'no grpc-message');
    assert.doesNotMatch(call.details, /Received HTTP status code/);
    assert.equal(raw.head[':status'], 200);
    assert.match(raw.head['content-type'], /^application\/grpc/);
    assert.equal(raw.grpcStatus, '14');
    assert.ok(raw.grpcMessage, 'no grpc-message');
    assert.equal(lila.child.exitCode, null);
  });

  it('answers DEADLINE_EXCEEDED or UNAVAILABLE in gRPC\'s terms when a server outlives --timeout', async () => {
    const server = await startGrpcServer('A');
    const lila = await startBalancer([`${server.address},h2`], ['--timeout', '300ms']);
    const client = echoClient(lila.port);

    const call = await unary(client, 'hang', {});
    const raw = await rawGrpcCall(lila.port, ECHO.hang.path);

    assert.ok([grpc.status.DEADLINE_EXCEEDED, grpc.status.UNAVAILABLE].includes(call.code), `code ${call.code}: ${call.details}`);
    assert.doesNotMatch(call.details, /Received HTTP status code/);
    assert.equal(raw.head[':status'], 200);
    assert.ok(['4', '14'].includes(raw.grpcStatus), `grpc-status ${raw.grpcStatus}`);
    assert.ok(raw.grpcMessage, 'no grpc-message');
  });
});
