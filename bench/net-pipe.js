'use strict';

const net = require('node:net');

// `node bench/net-pipe.js 127.0.0.1:8001 ...`: the plain net piping lila's tcp
// layer is held to (issue 7), a target of bench/compare.js. Listens on a free
// port at 127.0.0.1, prints `{"port":N}`, and pipes each client connection to
// the next backend, round-robin; SIGTERM and SIGINT stop it (their default action).
function main(servers) {
  const backends = servers.map((hostPort) => {
    const colon = hostPort.lastIndexOf(':');
    return { host: hostPort.slice(0, colon), port: Number(hostPort.slice(colon + 1)) };
  });
  let next = 0;
  const server = net.createServer((client) => {
    const { host, port } = backends[next];
    next = (next + 1) % backends.length;
    const upstream = net.connect(port, host);
    const destroy = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', destroy);
    upstream.on('error', destroy);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
}

main(process.argv.slice(2));
