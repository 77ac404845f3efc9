'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const { LILA, parseLilaPort, freePort, accepts } = require('./children');
const { runBench, refuseAfterSignal, stopRunChild, exited, sleep } = require('./run-kit');
const { nginxCache } = require('./peer-configs');
const { lilaRevision, textHeader, textRow } = require('./compare-report');
const suite = require('../test/http-cache-tests');

const NGINX = '/usr/sbin/nginx';
const VARNISHD = '/usr/sbin/varnishd';
const TARGETS = ['direct', 'lila', 'nginx', 'varnish', 'varnish-defaults'];
// varnishd compiles its VCL with cc before its child listens.
const READY_TIMEOUT_MS = 15000;
const OPEN_FILES = 4096;
const KEEPALIVE_SECONDS = 75;
const COLUMNS = [['target', 16], ['required', 8], ['optimal', 7], ['check', 5], ['table: required', 15], ['optimal', 7], ['check', 5],
  ['seconds', 7]];

// `node bench/cache-suite.js [--only lila,nginx] [--suite DIR] [-- <lila options>]`: the HTTP
// working group's cache tests (http-cache-tests, as test/cache-suite.test.js runs them) against the
// suite's own origin with nothing in between (`direct`), then through lila, nginx `proxy_cache` and
// Varnish, one after the other; the passes by kind, and the tests each did not pass in files it
// keeps. `--suite DIR`: a checkout of github.com/http-tests/cache-tests instead of the npm package
// (the current tests, which cache-tests.fyi's table runs). lila's options: `--cache` unless given.
runBench({}, async (run) => {
  const options = optionsFrom(process.argv.slice(2));
  run.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-cache-suite-bench-'));
  const kept = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-cache-suite-failing-'));
  const tested = options.suite === undefined ? undefined : suite.suiteAt(path.resolve(options.suite));
  const origin = await suite.startOrigin(run.dir, tested);
  run.children.push(origin.child);
  const tests = await suite.listTests(tested);
  const targets = targetsFor(run, origin.port, options.lilaOptions).filter(({ name }) => options.only.includes(name));
  const lines = [`http-cache-tests ${tested === undefined ? suite.VERSION : tested.label}, node ${process.version}, ${os.cpus().length} CPUs; passed: a result of true ` +
    "(the package's count); table: as cache-tests.fyi's table marks them, a test whose dependencies failed not passed", ''];
  for (const target of targets) lines.push(`${target.name}: ${target.version}${target.skipped ? ` (skipped: ${target.skipped})` : ''}`);
  process.stdout.write(`${[...lines, '', ...textHeader(COLUMNS)].join('\n')}\n`);
  for (const target of targets.filter(({ skipped }) => !skipped)) {
    const { base, child } = await target.start();
    const started = performance.now();
    const results = await suite.runClient(base, { suite: tested });
    const seconds = (performance.now() - started) / 1000;
    if (child !== null) await stopRunChild(run, child);
    const { counts, verdicts } = suite.tally(tests, results);
    suite.writeFailures(path.join(kept, `${target.name}.tsv`), tests, results, verdicts);
    const cell = (kind) => `${counts[kind].passed}/${counts[kind].total}`;
    process.stdout.write(`${textRow(COLUMNS, [target.name, ...suite.KINDS.map(cell),
      ...suite.KINDS.map((kind) => counts[kind].passedOnTable), seconds.toFixed(1)])}\n`);
  }
  process.stdout.write(`\nthe tests each did not pass: ${kept}/<target>.tsv\n`);
});

function optionsFrom(args) {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { only: { type: 'string' }, suite: { type: 'string' } } });
  const only = values.only === undefined ? TARGETS : values.only.split(',');
  const unknown = only.filter((name) => !TARGETS.includes(name));
  if (unknown.length > 0) throw new Error(`--only takes ${TARGETS.join(', ')}; received ${unknown.join(', ')}`);
  return { only, suite: values.suite, lilaOptions: positionals.length === 0 ? ['--cache'] : positionals };
}

// Each target: what it is, and how to start it in front of the origin (`base`: where the client goes).
function targetsFor(run, origin, lilaOptions) {
  const direct = {
    name: 'direct',
    version: `the suite's origin server itself (Node ${process.version})`,
    start: async () => ({ base: `http://127.0.0.1:${origin}`, child: null })
  };
  const lilaArgs = ['round-robin', `127.0.0.1:${origin}`, '-a', '127.0.0.1', '-p', '0', ...lilaOptions];
  const lila = {
    name: 'lila',
    version: `${lilaRevision()}: lila ${lilaArgs.join(' ')}`,
    start: () => startServer(run, process.execPath, [LILA, ...lilaArgs], 'lila')
  };
  const nginx = {
    name: 'nginx',
    version: fs.existsSync(NGINX)
      ? `${versionOf(NGINX, '-v', /nginx\/(\S+)/)}, proxy_cache with proxy_cache_revalidate and proxy_cache_lock on` : '',
    skipped: fs.existsSync(NGINX) ? '' : `${NGINX} not found (apt-get install nginx-light)`,
    start: async () => {
      const dir = fs.mkdtempSync(path.join(run.dir, 'nginx-'));
      const port = await freePort();
      const conf = path.join(dir, 'nginx.conf');
      fs.writeFileSync(conf, nginxCache({ dir, openFiles: OPEN_FILES, keepAliveSeconds: KEEPALIVE_SECONDS, port, origin }));
      const args = ['-p', dir, '-c', conf, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;'];
      return startServer(run, NGINX, args, 'nginx', port);
    }
  };
  // As the suite's own docker/serve.sh runs it (no default TTL, grace or keep of Varnish's own
  // making where the answer says nothing), and with Debian's defaults (a TTL of 120 s, 10 s of grace).
  const varnish = varnishTarget(run, origin, 'varnish',
    ['-p', 'default_ttl=0', '-p', 'default_grace=0', '-p', 'default_keep=3600', '-s', 'malloc,64M']);
  const varnishDefaults = varnishTarget(run, origin, 'varnish-defaults', []);
  return [direct, lila, nginx, varnish, varnishDefaults];
}

// Varnish with the default VCL (Debian's /etc/varnish/default.vcl, its backend the origin) and `params`.
function varnishTarget(run, origin, name, params) {
  const found = fs.existsSync(VARNISHD);
  return {
    name,
    version: found ? `${versionOf(VARNISHD, '-V', /varnish-(\S+)/)}, ${params.length === 0 ? "Debian's defaults" : params.join(' ')}` : '',
    skipped: found ? '' : `${VARNISHD} not found (apt-get install varnish)`,
    start: async () => {
      const dir = fs.mkdtempSync(path.join(run.dir, `${name}-`));
      const port = await freePort();
      const vcl = path.join(dir, 'default.vcl');
      fs.writeFileSync(vcl, `vcl 4.1;\nbackend default {\n  .host = "127.0.0.1";\n  .port = "${origin}";\n}\n`);
      // `-j none`: no switch to Varnish's users, who could not work in this directory.
      const args = ['-F', '-j', 'none', '-n', path.join(dir, 'work'), '-a', `127.0.0.1:${port}`, '-f', vcl, ...params];
      return startServer(run, VARNISHD, args, 'varnishd', port);
    }
  };
}

// The version a server prints with `flag` (on stderr, as nginx and varnishd do).
function versionOf(executable, flag, pattern) {
  const { stdout, stderr } = spawnSync(executable, [flag], { encoding: 'utf8' });
  const found = pattern.exec(`${stderr}${stdout}`);
  return `${path.basename(executable)} ${found === null ? '(version unknown)' : found[1]}`;
}

// Starts a server, its output kept (not printed: lila warns of the backend going down after each of
// the suite's deliberate disconnects) for the error it may end with. Ready once it accepts on `port`,
// or, with none, once it prints lila's startup line, which says its port.
async function startServer(run, command, args, name, port = null) {
  refuseAfterSignal(run);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  run.children.push(child);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text) => { output += text; });
  child.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exited(child)) throw new Error(`${name} exited (${child.signalCode || child.exitCode}) before it was ready:\n${output}`);
    const ready = port === null ? output.split('\n').map(parseLilaPort).find((found) => found !== undefined) : await accepts(port) && port;
    if (ready) return { child, base: `http://127.0.0.1:${ready}` };
    if (Date.now() > deadline) throw new Error(`${name} was not ready within ${READY_TIMEOUT_MS} ms:\n${output}`);
    await sleep(20);
  }
}
