'use strict';

// `node bench/idle-node-socket.js [count]`: what an idle accepted connection
// costs a Node process that does nothing with it, the floor under lila's
// `B/conn` in bench/compare.js's idle table. A `net` server holds `count`
// (8000) connections that a child process opens and keeps; RSS is read
// before and 1 s after (VmRSS of this process only).

const fs = require('node:fs');
const net = require('node:net');
const { fork } = require('node:child_process');

const inChild = process.argv[2] === 'clients';
const count = Number((inChild ? process.argv[4] : process.argv[2]) || 8000);

function rss() {
  return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
}

async function clients(port) {
  const sockets = [];
  for (let i = 0; i < count; i++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    sockets.push(socket);
    // Under the listen backlog.
    if (i % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all(sockets.map((socket) => (socket.connecting ? new Promise((resolve) => socket.once('connect', resolve)) : null)));
  process.send('connected');
}

if (inChild) {
  clients(Number(process.argv[3])).catch((err) => {
    process.stderr.write(`${err.stack}\n`);
    process.exit(1);
  });
  // Kept until the parent exits.
  process.on('disconnect', () => process.exit(0));
} else {
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => {});
    socket.on('data', () => {});
  });
  server.listen(0, '127.0.0.1', async () => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = rss();
    const child = fork(__filename, ['clients', String(server.address().port), String(count)]);
    await new Promise((resolve) => child.once('message', resolve));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const open = await new Promise((resolve) => server.getConnections((err, n) => resolve(err ? 0 : n)));
    process.stdout.write(`Node ${process.version}: ${open} idle connections, ${Math.round((rss() - before) / open)} B each (RSS)\n`);
    child.disconnect();
    process.exit(0);
  });
}
