'use strict';

const NAMES = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
// One unary method, no .proto: messages are Buffers passed through as they are.
const METHOD = '/lila.bench.Hello/Say';

/**
 * The method definition bench/grpc-backends.js serves and bench/grpc-load.js
 * calls: unary, identity serializers on Buffers.
 *
 * @returns {import('@grpc/grpc-js').MethodDefinition<Buffer, Buffer>}
 */
function helloMethod() {
  return {
    path: METHOD,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity
  };
}

/**
 * Starts `count` grpc-js servers on 127.0.0.1 (h2c), named A, B, C, ...,
 * each answering every call of `METHOD` with `Hello from <name>\n`.
 *
 * @param {number} count how many, 1 to 26
 * @returns {Promise<{backends: {name: string, port: number}[], close: () => void}>}
 */
async function startGrpcBackends(count) {
  if (!Number.isInteger(count) || count < 1 || count > NAMES.length) {
    throw new RangeError(`count must be an integer between 1 and ${NAMES.length}, received ${count}`);
  }
  const grpc = require('@grpc/grpc-js');
  const servers = [];
  const backends = [];
  for (const name of NAMES.slice(0, count)) {
    const server = new grpc.Server();
    const answer = Buffer.from(`Hello from ${name}\n`);
    server.addService({ Say: helloMethod() }, { Say: (call, callback) => callback(null, answer) });
    servers.push(server);
    const port = await new Promise((resolve, reject) => {
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
    });
    backends.push({ name, port });
  }
  return { backends, close: () => servers.forEach((server) => server.forceShutdown()) };
}

module.exports = { METHOD, helloMethod, startGrpcBackends };

function identity(buffer) {
  return buffer;
}

// `node bench/grpc-backends.js [count]`: prints `[{"name":"A","port":...},...]` once all listen, stops on SIGTERM.
if (require.main === module) {
  startGrpcBackends(Number(process.argv[2] || 3)).then(
    ({ backends, close }) => {
      process.stdout.write(`${JSON.stringify(backends)}\n`);
      process.once('SIGTERM', close);
      process.once('SIGINT', close);
    },
    (err) => {
      process.stderr.write(`grpc-backends: ${err.message}\n`);
      process.exitCode = 1;
    }
  );
}
