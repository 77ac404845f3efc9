'use strict';

const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { startBackends } = require('./backends');

const LILA = path.join(__dirname, '..', 'lila');
const PORTS = [8001, 8002, 8003];
const STARTED = /listening on \S+:(\d+) ->/;

main();

// `npm start`: backends A, B, C on 127.0.0.1:8001-8003, the real lila in front on 4444.
async function main() {
  let running;
  try {
    running = await startBackends(PORTS.length, { ports: PORTS });
  } catch (err) {
    process.stderr.write(`lila demo: ${listenProblem(err)}\n`);
    process.exitCode = 1;
    return;
  }
  const servers = running.backends.map(({ port }) => `127.0.0.1:${port}`);
  const lila = spawn(process.execPath, [LILA, 'round-robin', ...servers], {
    stdio: ['ignore', 'inherit', 'pipe']
  });
  let stopping = false;
  readline.createInterface({ input: lila.stderr }).on('line', (line) => {
    process.stderr.write(`${line}\n`);
    const started = STARTED.exec(line);
    if (started !== null) printHowTo(started[1]);
  });
  lila.on('close', async (code) => {
    await running.close();
    process.exitCode = stopping ? 0 : code === null ? 1 : code;
  });
  const stop = () => {
    stopping = true;
    lila.kill('SIGTERM');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

function printHowTo(port) {
  process.stdout.write(
    `Three backends (A, B, C) on 127.0.0.1:${PORTS[0]}-${PORTS[PORTS.length - 1]}, ` +
      `lila round-robin in front on port ${port}.\n` +
      `Try:  curl http://localhost:${port}/    (run it a few times: A, B, C, A, ...)\n` +
      'Stop with Ctrl-C.\n'
  );
}

function listenProblem(err) {
  if (err.code === 'EADDRINUSE') {
    return `cannot start a demo backend: 127.0.0.1:${err.port} is already in use`;
  }
  return `cannot start the demo backends: ${err.message}`;
}
