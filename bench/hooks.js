'use strict';

const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const { freePort } = require('./children');
const { processTree } = require('./proc-stats');
const { nginxBackends } = require('./peer-configs');
const { stopRunChild, pinned, openFilesLimit, startListening, exited } = require('./run-kit');
const { ask } = require('./load-process');
const { NGINX, PROXY_CPU, WARMUP_SECONDS, perCpuBench } = require('./per-cpu-rounds');
const { optionTargets, overOptionOff } = require('./option-targets');

const LOAD_CPU = 1;
// Issue 49's goal: an empty hook costs at most 5% of lila's requests per CPU-second.
const GOAL = 0.95;
const LOADS = [{ name: '64 keep-alive', connections: 64 }];
const BODY = 'Hello from A\n';
// The header the hooks set: the backend sends back what it received of it (nginx's add_header
// leaves out an empty value), so the check sees that the request's header reached it.
const HEADER = 'x-bench';
const SEEN_HEADER = 'x-bench-seen';
// What each target runs, in the table's order; `point` the hook's function, counted by /metrics.
const HOOKS = [
  { name: 'no hook', file: null },
  { name: 'empty onRequest', file: 'empty.cjs', point: 'onRequest', source: 'exports.onRequest = () => {};\n', check: () => true },
  {
    name: 'onRequest header', file: 'request-header.cjs', point: 'onRequest',
    source: `exports.onRequest = (req) => {\n  req.headers['${HEADER}'] = '1';\n};\n`,
    check: (headers) => headers[SEEN_HEADER] === '1'
  },
  {
    name: 'onResponse header', file: 'response-header.cjs', point: 'onResponse',
    source: `exports.onResponse = (res) => {\n  res.headers['${HEADER}'] = '1';\n};\n`,
    check: (headers) => headers[HEADER] === '1'
  }
];
const NO_HOOK = HOOKS[0];
const EMPTY_HOOK = HOOKS[1];
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;

// `npm run bench:hooks [-- --rounds <n>] [--duration <s>] [--lila NAME=PATH]...`: lila (the fast
// engine) alone on the proxy core in front of one backend (nginx answering 13 bytes, on the load
// core), with no hook, an empty onRequest, an onRequest that sets a request header, and an
// onResponse that sets a response header; requests per proxy CPU-second to 64 keep-alive
// connections, medians over interleaved rounds, each hook over no hook. Each `--lila` adds the
// lila executable at PATH (another checkout's) as `... @NAME`: every target it can run (no hook
// only, without --hook), in the same rounds.
perCpuBench({
  script: __filename,
  loads: LOADS,
  name: 'hooks',
  prepare: startBackend,
  measureOne,
  describe,
  targets: (lilas) => optionTargets(lilas, HOOKS, '--hook'),
  ratios: (list) => overOptionOff(list, NO_HOOK, (hook) => (hook === EMPTY_HOOK ? GOAL : undefined))
});

// The hook modules, in the run's directory, and the backend: nginx answering BODY, on the load core, as bench/compare.js's.
async function startBackend(run) {
  const hooks = path.join(run.dir, 'hooks');
  fs.mkdirSync(hooks);
  for (const hook of HOOKS) if (hook.file !== null) fs.writeFileSync(path.join(hooks, hook.file), hook.source);
  const port = await freePort();
  const dir = path.join(run.dir, 'backend');
  fs.mkdirSync(dir);
  const file = path.join(dir, 'nginx.conf');
  const text = nginxBackends({ dir, openFiles: openFilesLimit(OPEN_FILES), keepAliveSeconds: KEEPALIVE_SECONDS * 4, backends: [{ name: 'A', port }] })
    .replace('location / {', `location / { add_header ${SEEN_HEADER} $http_${HEADER.replace(/-/g, '_')};`);
  fs.writeFileSync(file, text);
  const [command, args] = pinned(run, LOAD_CPU, NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']);
  await startListening(run, command, args, port, 'the backend (nginx)');
  return { port, hooks };
}

// A target's lila on the proxy core, on free ports (its admin API's for /metrics): a new process for each run.
async function startTarget(run, backend, target) {
  const [port, admin] = [await freePort(), await freePort()];
  const args = [target.lila, 'round-robin', `127.0.0.1:${backend.port}`, '-a', '127.0.0.1', '-p', String(port), '--engine', 'fast',
    '--keepalive-timeout', `${KEEPALIVE_SECONDS}s`, '--log-level', 'warn', '--admin', `127.0.0.1:${admin}`];
  if (target.kind.file !== null) args.push('--hook', path.join(backend.hooks, target.kind.file));
  const [command, commandArgs] = pinned(run, PROXY_CPU, process.execPath, args);
  return { child: await startListening(run, command, commandArgs, port, target.name), port, admin };
}

// One run: a new lila, checked with one GET (the backend's answer, and what the hook did), loaded;
// then its /metrics must count a call of the hook for every request: the hook ran.
async function measureOne(run, backend, target, load, duration) {
  const { child, port, admin } = await startTarget(run, backend, target);
  try {
    const answer = await get(port, '/');
    if (answer.status !== 200 || answer.body !== BODY || (target.kind.file !== null && !target.kind.check(answer.headers))) {
      throw new Error(`${target.name}: GET / answered ${answer.status} ${JSON.stringify(answer.headers)} ${JSON.stringify(answer.body)}: ` +
        'not the backend\'s answer as the hook makes it');
    }
    const pids = processTree(child.pid);
    const sample = await ask(run.load, { op: 'autocannon', port, path: '/', connections: load.connections, duration, pids });
    if (exited(child)) throw new Error(`${target.name} exited (${child.signalCode || child.exitCode})`);
    if (target.kind.file !== null) {
      const calls = hookCalls((await get(admin, '/metrics')).body, target.kind.point);
      if (calls < sample.requests) throw new Error(`${target.name}: /metrics counts ${calls} calls of ${target.kind.point} for ${sample.requests} requests`);
    }
    return sample;
  } finally {
    await stopRunChild(run, child);
  }
}

// `lila_hook_calls_total{hook="...",point="onRequest"} 123`, added up over the hooks.
function hookCalls(text, point) {
  let calls = 0;
  for (const [, labels, value] of text.matchAll(/^lila_hook_calls_total\{([^}]*)\} (\S+)$/gm)) {
    if (labels.includes(`point="${point}"`)) calls += Number(value);
  }
  return calls;
}

function get(port, urlPath) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

// The setup, as the report says it: what runs, how, and what the columns count.
function describe(options, cores) {
  const hooks = HOOKS.filter((hook) => hook.file !== null).map((hook) => `${hook.name} (\`${hook.source.replace(/\s+/g, ' ').trim()}\`)`);
  const loads = options.loads.map((load) => `${load.connections} keep-alive connections`);
  return `lila (\`lila round-robin BACKEND -a 127.0.0.1 -p PORT --engine fast --keepalive-timeout ${KEEPALIVE_SECONDS}s ` +
    '--log-level warn --admin 127.0.0.1:ADMIN [--hook FILE]`) in front of one backend (nginx, one worker, on the load core, ' +
    `answering \`GET /\` with ${JSON.stringify(BODY)}, ${Buffer.byteLength(BODY)} bytes, and \`${SEEN_HEADER}\` with the ` +
    `\`${HEADER}\` it received), ${cores}; a new process for each run; no hook, then hooks (CommonJS, in the run's temporary ` +
    `directory): ${hooks.join(', ')}. Each run checked by one GET (the backend's answer, the header the hook set) and after ` +
    `its load by /metrics (a call of the hook for every request). Load: autocannon, \`GET /\` to ${loads.join(', ')}. ` +
    `${options.rounds} round${options.rounds === 1 ? '' : 's'} of ${options.duration} s per target after ${WARMUP_SECONDS} s ` +
    'of warm-up, the first target rotating; medians. proxy CPU s: user + system of lila, from /proc.';
}
