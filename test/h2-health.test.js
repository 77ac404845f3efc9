'use strict';

const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');
const { cleanup, onCleanup, startLila, nextLine } = require('./helpers');
const { startH2Backend } = require('./h2');

const GRPC_HEALTH_PATH = '/grpc.health.v1.Health/Check';
// HealthCheckResponse { status: SERVING } and { status: NOT_SERVING }, as protobuf bytes.
const SERVING = Buffer.from([0x08, 0x01]);
const NOT_SERVING = Buffer.from([0x08, 0x02]);

// gRPC's health service with raw (protobuf) messages: no proto files needed.
const HEALTH = {
  check: {
    path: GRPC_HEALTH_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: (buffer) => buffer,
    requestDeserialize: (buffer) => buffer,
    responseSerialize: (buffer) => buffer,
    responseDeserialize: (buffer) => buffer
  }
};

async function startHealthServer(state) {
  const server = new grpc.Server();
  server.addService(HEALTH, {
    check(call, callback) {
      state.checks++;
      callback(null, state.serving ? SERVING : NOT_SERVING);
    }
  });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  onCleanup(() => server.forceShutdown());
  return `127.0.0.1:${port}`;
}

function startChecking(server, path) {
  return startLila(['round-robin', '--layer', 'http', '-a', '127.0.0.1', '-p', '0', `${server},h2`,
    '--health-check', '--health-interval', '100ms', '--health-rise', '1', '--health-fall', '1', '--health-path', path]);
}

describe('health checks of h2 backends', () => {
  afterEach(cleanup);

  it('checks an h2c backend with GET over HTTP/2, down on 503 and up on 200', async () => {
    const state = { status: 200, versions: [] };
    const backend = await startH2Backend('A', (stream, headers) => {
      state.versions.push(stream.session.alpnProtocol);
      stream.respond({ ':status': headers[':path'] === '/ready' ? state.status : 404 });
      stream.end();
    });
    const lila = await startChecking(backend.address, '/ready');

    const down = nextLine(lila, /lila: warn: backend \S+ is down: 1 health checks failed, the last: health check answered 503/);
    state.status = 503;
    await down;
    const up = nextLine(lila, /lila: backend \S+ is up: 1 health checks passed/);
    state.status = 200;
    await up;

    // Every check came over h2c (a plain HTTP/2 session), none over HTTP/1.1.
    assert.ok(state.versions.length >= 2);
    assert.deepEqual(new Set(state.versions), new Set(['h2c']));
  });

  it("makes gRPC's health call when --health-path names it, and wants SERVING", async () => {
    const state = { serving: true, checks: 0 };
    const server = await startHealthServer(state);
    const lila = await startChecking(server, GRPC_HEALTH_PATH);

    const down = nextLine(lila, /lila: warn: backend \S+ is down: 1 health checks failed, the last: health check answered: not serving/);
    state.serving = false;
    await down;
    const up = nextLine(lila, /lila: backend \S+ is up: 1 health checks passed/);
    state.serving = true;
    await up;
    assert.ok(state.checks >= 2);
  });

  it('takes a gRPC server that answers GET with 415 as down', async () => {
    const state = { serving: true, checks: 0 };
    const server = await startHealthServer(state);
    const lila = await startChecking(server, '/');

    await nextLine(lila, /lila: warn: backend \S+ is down: 1 health checks failed, the last: health check answered 415/);
    assert.equal(state.checks, 0);
  });
});
