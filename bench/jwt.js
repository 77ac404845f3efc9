'use strict';

const crypto = require('node:crypto');
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
const LOADS = [{ name: '64 keep-alive', connections: 64 }];
const BODY = 'Hello from A\n';
// Past lila's 1000 remembered tokens, cycled in order: every check is a signature's.
const MANY = 2048;
// What each target sends: no token (and lila without --jwt-*), one token on every request (checked once, then
// remembered), or MANY tokens in turn (each checked, none remembered), of each algorithm.
const KINDS = [
  { name: 'no JWT', alg: null },
  { name: 'RS256, one token', alg: 'RS256', tokens: 1 },
  { name: `RS256, ${MANY} tokens`, alg: 'RS256', tokens: MANY },
  { name: 'ES256, one token', alg: 'ES256', tokens: 1 },
  { name: `ES256, ${MANY} tokens`, alg: 'ES256', tokens: MANY }
];
const NO_JWT = KINDS[0];
const KEYS = {
  RS256: { type: 'rsa', options: { modulusLength: 2048 }, hash: 'sha256', sign: {} },
  ES256: { type: 'ec', options: { namedCurve: 'P-256' }, hash: 'sha256', sign: { dsaEncoding: 'ieee-p1363' } }
};
const KEEPALIVE_SECONDS = 75;
const OPEN_FILES = 4096;

// `npm run bench:jwt [-- --rounds <n>] [--duration <s>] [--lila NAME=PATH]...`: lila (the fast engine) alone on
// the proxy core in front of one backend (nginx answering 13 bytes, on the load core), without --jwt-*, then with
// --jwt-jwks (a file of an RSA and an EC key) and a valid RS256 or ES256 token on every request: one token
// (verified once, then remembered) or 2048 in turn (each verified); requests per proxy CPU-second to 64
// keep-alive connections, medians over interleaved rounds, each over no JWT. Each `--lila` adds the lila
// executable at PATH as `... @NAME`: every target it can run (no JWT only, without --jwt-jwks), in the same rounds.
perCpuBench({
  script: __filename,
  loads: LOADS,
  name: 'jwt',
  prepare: makeKeys,
  measureOne,
  describe,
  targets: (lilas) => optionTargets(lilas, KINDS, '--jwt-jwks'),
  ratios: (list) => overOptionOff(list, NO_JWT)
});

// The keys (a JWK Set file in the run's directory), the tokens of each algorithm, and the backend.
async function makeKeys(run) {
  const jwks = { keys: [] };
  const tokens = {};
  const expires = Math.floor(Date.now() / 1000) + 24 * 3600;
  for (const [alg, spec] of Object.entries(KEYS)) {
    const pair = crypto.generateKeyPairSync(spec.type, spec.options);
    jwks.keys.push({ ...pair.publicKey.export({ format: 'jwk' }), kid: alg, alg, use: 'sig' });
    tokens[alg] = [];
    for (let i = 0; i < MANY; i++) {
      const input = `${part({ alg, kid: alg, typ: 'JWT' })}.${part({ sub: `user${i}`, iss: 'https://id.example', scope: 'read', exp: expires })}`;
      const signature = crypto.sign(spec.hash, Buffer.from(input), { key: pair.privateKey, ...spec.sign });
      tokens[alg].push(`Bearer ${input}.${signature.toString('base64url')}`);
    }
  }
  const file = path.join(run.dir, 'jwks.json');
  fs.writeFileSync(file, JSON.stringify(jwks));
  return { ...(await startBackend(run)), jwks: file, tokens };
}

// nginx answering BODY, on the load core, as bench/compare.js's.
async function startBackend(run) {
  const port = await freePort();
  const dir = path.join(run.dir, 'backend');
  fs.mkdirSync(dir);
  const file = path.join(dir, 'nginx.conf');
  fs.writeFileSync(file, nginxBackends({ dir, openFiles: openFilesLimit(OPEN_FILES), keepAliveSeconds: KEEPALIVE_SECONDS * 4, backends: [{ name: 'A', port }] }));
  const [command, args] = pinned(run, LOAD_CPU, NGINX, ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;']);
  await startListening(run, command, args, port, 'the backend (nginx)');
  return { port };
}

// A target's lila on the proxy core, on free ports (its admin API's for /metrics): a new process for each run.
async function startTarget(run, served, target) {
  const [port, admin] = [await freePort(), await freePort()];
  const args = [target.lila, 'round-robin', `127.0.0.1:${served.port}`, '-a', '127.0.0.1', '-p', String(port), '--engine', 'fast',
    '--keepalive-timeout', `${KEEPALIVE_SECONDS}s`, '--log-level', 'warn', '--admin', `127.0.0.1:${admin}`];
  if (target.kind !== NO_JWT) args.push('--jwt-jwks', served.jwks, '--jwt-issuer', 'https://id.example', '--jwt-require', 'scope=read');
  const [command, commandArgs] = pinned(run, PROXY_CPU, process.execPath, args);
  return { child: await startListening(run, command, commandArgs, port, target.name), port, admin };
}

// One run: a new lila, checked with one GET (the backend's answer with a token, 401 without), loaded; then its
// /metrics must count a valid check for every request: the tokens were checked.
async function measureOne(run, served, target, load, duration) {
  const { child, port, admin } = await startTarget(run, served, target);
  const { kind } = target;
  try {
    const tokens = kind === NO_JWT ? [] : served.tokens[kind.alg].slice(0, kind.tokens);
    const answer = await get(port, tokens[0]);
    if (answer.status !== 200 || answer.body !== BODY) throw new Error(`${target.name}: GET / answered ${answer.status} ${JSON.stringify(answer.body)}`);
    if (kind !== NO_JWT && (await get(port, undefined)).status !== 401) throw new Error(`${target.name}: GET / without a token is not refused`);
    const pids = processTree(child.pid);
    const cycle = kind === NO_JWT ? undefined : { name: 'authorization', values: tokens };
    const sample = await ask(run.load, { op: 'autocannon', port, path: '/', connections: load.connections, duration, pids, cycle });
    if (exited(child)) throw new Error(`${target.name} exited (${child.signalCode || child.exitCode})`);
    if (kind !== NO_JWT) {
      const valid = validChecks((await get(admin, undefined, '/metrics')).body);
      if (valid < sample.requests) throw new Error(`${target.name}: /metrics counts ${valid} valid tokens for ${sample.requests} requests`);
    }
    return sample;
  } finally {
    await stopRunChild(run, child);
  }
}

// `lila_jwt_requests_total{route="*",result="valid"} 123`.
function validChecks(text) {
  const match = /^lila_jwt_requests_total\{route="\*",result="valid"\} (\S+)$/m.exec(text);
  return match === null ? 0 : Number(match[1]);
}

function get(port, authorization, urlPath = '/') {
  return new Promise((resolve, reject) => {
    const headers = authorization === undefined ? {} : { authorization };
    http.get({ host: '127.0.0.1', port, path: urlPath, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

function part(value) {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

// The setup, as the report says it: what runs, how, and what the columns count.
function describe(options, cores) {
  const loads = options.loads.map((load) => `${load.connections} keep-alive connections`);
  return `lila (\`lila round-robin BACKEND -a 127.0.0.1 -p PORT --engine fast --keepalive-timeout ${KEEPALIVE_SECONDS}s ` +
    '--log-level warn --admin 127.0.0.1:ADMIN [--jwt-jwks jwks.json --jwt-issuer https://id.example --jwt-require scope=read]`) ' +
    `in front of one backend (nginx, one worker, on the load core, answering \`GET /\` with ${JSON.stringify(BODY)}, ` +
    `${Buffer.byteLength(BODY)} bytes), ${cores}; a new process for each run; no JWT, then a valid token in ` +
    '`Authorization: Bearer` on every request, RS256 (RSA 2048) or ES256 (P-256), with `iss`, `exp`, `sub` and `scope` ' +
    `claims: one token on every request (verified once, then remembered), or ${MANY} tokens in turn across all connections ` +
    '(more than the 1000 lila remembers, cycled in order: each request a signature check). Each run checked by two GETs ' +
    '(with a token: the backend\'s answer; without: 401) and after its load by /metrics (a valid check for every request). ' +
    `Load: autocannon, \`GET /\` to ${loads.join(', ')}. ${options.rounds} round${options.rounds === 1 ? '' : 's'} of ` +
    `${options.duration} s per target after ${WARMUP_SECONDS} s of warm-up, the first target rotating; medians. proxy CPU s: ` +
    'user + system of lila, from /proc.';
}
