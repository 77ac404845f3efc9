'use strict';

const fs = require('node:fs');
const http = require('node:http');
const http2 = require('node:http2');
const path = require('node:path');
const { once } = require('node:events');
const { spawn } = require('node:child_process');
const { pathToFileURL, fileURLToPath } = require('node:url');
const { parseArgs } = require('node:util');
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
const { textHeader, textRow, lilaRevision } = require('./compare-report');

// The first requests open the connections and warm lila up; the last one runs with the logpoints set.
const WARMUP_REQUESTS = 20;
const ARMED_WARMUP_REQUESTS = 1;
// After the client has the whole response lila still ends the exchange (its record, the socket back
// to the pool): the walk ends once no lib/ function has run for this long.
const QUIET_MS = 100;
const BODY = 'Hello from A\n';
// --compress needs a text type of 1 KB or more.
const COMPRESSIBLE_BODY = JSON.stringify(Array.from({ length: 64 }, (_, i) => ({ id: i, name: `user-${i}`, active: i % 2 === 0 })));
// Where the probe lives on lila's thread (installProbe), and what it records of each pass.
const PROBE_KEY = "Symbol.for('lila.walk')";
const PROBE = `globalThis[${PROBE_KEY}]`;
const PASS_FIELDS = 4;
const COVERAGE = 'Profiler.takePreciseCoverage';
// lila's upstream sockets idle for 4 s are closed; the backend must not close them first.
const BACKEND_KEEPALIVE_MS = 60000;
const USAGE = 'usage: node bench/walk.js [--engine fast|node] [--h2] [--compress] [--mirror] [--lila DIR] [--verbose] [--json]\n' +
  '       node bench/walk.js --config FILE [--h2] [--compress] [--lila DIR] [--verbose] [--json]\n' +
  '       node bench/walk.js --all [--lila DIR]';
// What --all measures, one child process each: the headline first.
const CONFIGURATIONS = [
  { name: 'fast, HTTP/1.1', args: [] },
  { name: 'fast, h2 (h2c)', args: ['--h2'] },
  { name: 'node, HTTP/1.1', args: ['--engine', 'node'] },
  { name: 'fast, HTTP/1.1, --compress', args: ['--compress'] },
  { name: 'fast, HTTP/1.1, --mirror', args: ['--mirror'] }
];
const ALL_COLUMNS = [['configuration', 26], ['steps', 5], ['files', 5], ['file entries', 12], ['returns', 7], ['most entered (file entries)', 30]];

if (!isMainThread) drive(workerData).catch((err) => parentPort.postMessage({ type: 'error', message: err.stack }));
else main();

// `node bench/walk.js [options]` (`npm run bench:walk`): the lib/ functions one GET through lila
// enters, in order, counted by file; see bench/README.md's Walk.
async function main() {
  let options;
  try {
    options = optionsFrom(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${err.message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  try {
    if (options.all) {
      await walkAll(options);
    } else {
      const walk = await walkOnce(options);
      process.stdout.write(options.json ? `${JSON.stringify(walk, null, 2)}\n` : formatWalk(walk, options.verbose));
    }
  } catch (err) {
    process.stderr.write(`bench: ${err.message}\n`);
    process.exitCode = 1;
  }
}

function optionsFrom(args) {
  const { values } = parseArgs({
    args,
    options: {
      engine: { type: 'string' },
      h2: { type: 'boolean', default: false },
      compress: { type: 'boolean', default: false },
      mirror: { type: 'boolean', default: false },
      config: { type: 'string' },
      lila: { type: 'string', default: path.join(__dirname, '..') },
      verbose: { type: 'boolean', short: 'v', default: false },
      json: { type: 'boolean', default: false },
      all: { type: 'boolean', default: false }
    }
  });
  const engine = values.engine ?? 'fast';
  if (!['fast', 'node'].includes(engine)) throw new Error(`"--engine" must be fast or node, received "${engine}"`);
  if (engine === 'node' && values.h2) throw new Error('"--h2" needs the fast engine: the node engine serves HTTP/1.1 only');
  if (values.config !== undefined && (values.engine !== undefined || values.mirror)) {
    throw new Error('"--config" names its own engine and mirrors: --engine and --mirror go in the file');
  }
  if (values.all && (values.engine !== undefined || values.h2 || values.compress || values.mirror || values.config !== undefined || values.json || values.verbose)) {
    throw new Error('"--all" measures its own configurations: only --lila goes with it');
  }
  const configText = values.config === undefined ? null : fs.readFileSync(values.config, 'utf8');
  return { ...values, engine, root: path.resolve(values.lila), configText };
}

// lila runs on this thread, alone; the worker drives the debugger, the backends and the client.
async function walkOnce(options) {
  const worker = new Worker(__filename, { workerData: { h2: options.h2, compress: options.compress, root: options.root } });
  const next = messages(worker);
  let service = null;
  try {
    const { backend, shadow } = await next('backends');
    // Required once the worker counts calls: lib/'s functions are all in its coverage.
    const lila = require(path.join(options.root, 'lib'));
    const created = lila.createService({
      config: configText(options, backend, shadow),
      logger: new lila.Logger({ level: 'silent' }),
      drainTimeout: 100
    });
    const { port } = await created.start();
    service = created;
    worker.postMessage({ type: 'lila', port });
    const { walk } = await next('walk');
    return { ...heading(options), ...summarize(walk), ...walk };
  } finally {
    if (service !== null) {
      service.stop();
      await service.exited;
    }
    await worker.terminate();
  }
}

function configText(options, backend, shadow) {
  if (options.configText !== null) return options.configText.replaceAll('$BACKEND', backend).replaceAll('$SHADOW', shadow);
  const route = `  route * walk${options.compress ? ' --compress' : ''}${options.mirror ? ' --mirror shadow' : ''}`;
  return [
    `--engine ${options.engine}`,
    `pool walk round-robin ${backend}`,
    ...(options.mirror ? [`pool shadow round-robin ${shadow}`] : []),
    'listen 127.0.0.1:0',
    route,
    ''
  ].join('\n');
}

function heading(options) {
  const what = options.configText !== null ? `--config ${options.config}${options.compress ? ', a compressible answer' : ''}`
    : `--engine ${options.engine}${options.compress ? ' --compress' : ''}${options.mirror ? ' --mirror' : ''}`;
  return {
    lila: lilaRevision(options.root),
    node: process.version,
    request: `GET / over ${options.h2 ? 'h2 (h2c, prior knowledge)' : 'HTTP/1.1 keep-alive'}`,
    configuration: what
  };
}

// The walk's numbers: a step is one entry into a lib/ function; a file entry, a step in another
// file than the step before; a return, a file entry into a file an earlier step was in.
function summarize(walk) {
  const perFile = new Map();
  let previous = null;
  let entries = 0;
  let returns = 0;
  for (const step of walk.steps.filter((s) => !s.timer)) {
    const file = perFile.get(step.file) || { file: step.file, calls: 0, entries: 0, returns: 0 };
    file.calls++;
    if (step.file !== previous) {
      entries++;
      file.entries++;
      if (perFile.has(step.file)) {
        returns++;
        file.returns++;
      }
    }
    step.kind = step.file === previous ? 'same' : perFile.has(step.file) ? 'return' : 'entry';
    perFile.set(step.file, file);
    previous = step.file;
  }
  const files = [...perFile.values()].sort((a, b) => b.calls - a.calls || b.entries - a.entries || a.file.localeCompare(b.file));
  const counted = walk.steps.filter((s) => !s.timer).length;
  return { counts: { steps: counted, files: files.length, entries, returns, timer: walk.steps.length - counted }, perFile: files };
}

function formatWalk(walk, verbose) {
  const { counts } = walk;
  const lines = [
    `${walk.lila}, Node ${walk.node}: one ${walk.request}, lila ${walk.configuration}`,
    `(${walk.reused ? 'the client\'s connection to lila and lila\'s to the backend both reused' : 'NOT on reused connections: see "reused" with --json'})`,
    '',
    `steps (entries into lib/ functions)                   ${counts.steps}`,
    `files                                                 ${counts.files}`,
    `file entries (a step in another file than the last)   ${counts.entries}`,
    `returns (file entries into a file already left)       ${counts.returns}`,
    `timer callbacks in the window (not counted)           ${counts.timer}`,
    ''
  ];
  const columns = [['file', Math.max(4, ...walk.perFile.map((f) => f.file.length))], ['calls', 5], ['entries', 7], ['returns', 7]];
  lines.push(...textHeader(columns), ...walk.perFile.map((f) => textRow(columns, [f.file, f.calls, f.entries, f.returns])), '');
  lines.push(walk.unseen.length === 0
    ? 'V8\'s call counts over the window agree: every call of a lib/ function in it is a step above (or a timer\'s).'
    : `V8's call counts over the window disagree for ${walk.unseen.length} functions: ${walk.unseen.map(
      (u) => `${u.where} ${u.name} (called ${u.calls}, seen ${u.seen})`).join('; ')}`);
  if (verbose) lines.push('', ...sequence(walk));
  return `${lines.join('\n')}\n`;
}

// One line a step: its number, → for a file entered the first time, ↩ for a return, then file:line function.
// The worker reads the response while lila runs on: where this line falls is as the worker saw it.
const RESPONDED = '    -- the client has read the whole response';

function sequence(walk) {
  const lines = [];
  let n = 0;
  walk.steps.forEach((step, i) => {
    if (i === walk.responded) lines.push(RESPONDED);
    const mark = step.timer ? ' ' : { entry: '→', return: '↩', same: ' ' }[step.kind];
    lines.push(`${step.timer ? ' (timer)' : String(++n).padStart(4)} ${mark} ${step.file}:${step.line} ${step.name}`);
  });
  if (walk.responded === walk.steps.length) lines.push(RESPONDED);
  return lines;
}

// Each configuration in a child process of its own (one lila, one debugger), one line each.
async function walkAll(options) {
  const rows = [];
  let head = null;
  for (const { name, args } of CONFIGURATIONS) {
    const walk = JSON.parse(await runChild([__filename, ...args, '--lila', options.root, '--json']));
    head ??= `${walk.lila}, Node ${walk.node}: one GET / each, on connections already open`;
    const top = walk.perFile.slice().sort((a, b) => b.entries - a.entries)[0];
    rows.push(textRow(ALL_COLUMNS, [name, walk.counts.steps, walk.counts.files, walk.counts.entries, walk.counts.returns,
      `${path.relative('lib', top.file)} ×${top.entries}${walk.reused ? '' : ' (not reused!)'}`]));
  }
  process.stdout.write(`${[head, '', ...textHeader(ALL_COLUMNS), ...rows].join('\n')}\n`);
}

async function runChild(args) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const chunks = [];
  child.stdout.on('data', (chunk) => chunks.push(chunk));
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`node ${args.map((a) => path.relative('.', a) || a).join(' ')} exited with ${code}`);
  return Buffer.concat(chunks).toString();
}

// The worker's messages by type; an error or an early exit rejects what is awaited.
function messages(worker) {
  const waiting = new Map();
  const arrived = new Map();
  let failure = null;
  const fail = (err) => {
    failure = err;
    for (const { reject } of waiting.values()) reject(err);
  };
  worker.on('message', (message) => {
    if (message.type === 'error') return fail(new Error(`the walk's worker failed: ${message.message}`));
    if (waiting.has(message.type)) waiting.get(message.type).resolve(message);
    else arrived.set(message.type, message);
  });
  worker.on('error', fail);
  worker.on('exit', () => fail(failure || new Error('the walk\'s worker exited')));
  return (type) => new Promise((resolve, reject) => {
    if (arrived.has(type)) return resolve(arrived.get(type));
    if (failure !== null) return reject(failure);
    waiting.set(type, { resolve, reject });
  });
}

// The worker: backends, client, and the main thread's debugger.
async function drive({ h2, compress, root }) {
  const inspector = require('node:inspector');
  const session = new inspector.Session();
  session.connectToMainThread();
  // Replies from the main thread hold no handle of the worker's loop; this does, until the end.
  const alive = setInterval(() => {}, 1 << 30);
  const libUrl = `${pathToFileURL(path.join(root, 'lib'))}/`;
  const backend = await startBackend(compress ? COMPRESSIBLE_BODY : BODY, compress ? 'application/json' : 'text/plain');
  const shadow = await startBackend(BODY, 'text/plain');
  const recorder = new Recorder(session, root);
  await recorder.start();
  parentPort.postMessage({ type: 'backends', backend: backend.address, shadow: shadow.address });
  const [{ port }] = await once(parentPort, 'message');
  const client = h2 ? h2Client(port, compress) : h1Client(port, compress);
  for (let i = 0; i < WARMUP_REQUESTS; i++) await client.get();

  await recorder.arm(libFunctions(await recorder.post(COVERAGE), libUrl, true));
  // Arming took a while: this request uses the connections again before the one measured, as the warm-up's did.
  for (let i = 0; i < ARMED_WARMUP_REQUESTS; i++) await client.get();
  await recorder.quiet(QUIET_MS);

  const connections = backend.connections;
  await recorder.restart();
  const { reused } = await client.get();
  const responded = (await recorder.evaluate('passes.length')) / PASS_FIELDS;
  await recorder.quiet(QUIET_MS);
  const measured = await recorder.restart();
  await recorder.post('Debugger.disable');
  await recorder.post('Profiler.stopPreciseCoverage');
  client.close();
  clearInterval(alive);
  const steps = recorder.steps(measured.passes);
  parentPort.postMessage({
    type: 'walk',
    walk: {
      steps,
      responded: steps.filter((step) => step.pass < responded).length,
      reused: reused && backend.connections === connections,
      logpoints: recorder.logpoints,
      unseen: recorder.disagreements(steps, libFunctions(measured.coverage, libUrl))
    }
  });
}

/**
 * Logpoints on lib/'s functions: a breakpoint whose condition calls the probe installed on lila's
 * thread (`installProbe`) and answers false, so lila is never paused, nor waits for this thread.
 */
class Recorder {
  constructor(session, root) {
    this.session = session;
    this.root = root;
    /** @type {object[]} the functions logpoints are set on, by the number their condition passes */
    this.functions = [];
    this.logpoints = 0;
  }

  post(method, params = {}) {
    return new Promise((resolve, reject) => {
      this.session.post(method, params, (err, result) => (err ? reject(err) : resolve(result)));
    });
  }

  async evaluate(expression) {
    const { result, exceptionDetails } = await this.post('Runtime.evaluate', { expression: `${PROBE}.${expression}`, returnByValue: true });
    if (exceptionDetails !== undefined) throw new Error(`the probe failed: ${exceptionDetails.exception?.description || exceptionDetails.text}`);
    return result.value;
  }

  // Counts calls from now on: lib/ is required after this, so all its functions are counted.
  async start() {
    // A `debugger;` statement would pause lila: let it go on.
    this.session.on('Debugger.paused', () => this.session.post('Debugger.resume'));
    await this.post('Profiler.enable');
    await this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await this.post('Debugger.enable');
    await this.post('Runtime.evaluate', { expression: `(${installProbe})(${PROBE_KEY})` });
  }

  // Logpoints at each function's first breakable place and at each of its returns. Each stage is
  // posted at once: lila's thread answers the lot in one turn instead of one a wake-up.
  async arm(functions) {
    const scripts = [...new Set(functions.map((fn) => fn.scriptId))];
    const sources = await Promise.all(scripts.map((scriptId) => this.post('Debugger.getScriptSource', { scriptId })));
    const starts = new Map(scripts.map((scriptId, i) => [scriptId, lineStarts(sources[i].scriptSource)]));
    const places = await Promise.all(functions.map((fn) => this.post('Debugger.getPossibleBreakpoints', {
      start: location(fn.scriptId, starts.get(fn.scriptId), fn.start),
      end: location(fn.scriptId, starts.get(fn.scriptId), fn.end),
      restrictToFunction: true
    })));
    const logpoints = [];
    functions.forEach((fn, i) => {
      const [entry, ...rest] = places[i].locations;
      if (entry === undefined) return;
      fn.id = this.functions.push(fn) - 1;
      fn.line = location(fn.scriptId, starts.get(fn.scriptId), fn.start).lineNumber + 1;
      const returns = entry.type === 'return' ? [] : rest.filter((place) => place.type === 'return');
      // Without a return of its own (an empty body, an arrow's expression), a function's entry is passed once a call.
      fn.tracked = returns.length > 0;
      for (const [place, returned] of [[entry, false], ...returns.map((place) => [place, true])]) {
        logpoints.push(this.post('Debugger.setBreakpoint', { location: place, condition: `${PROBE}.pass(${fn.id}, ${returned})` }));
      }
    });
    await Promise.all(logpoints);
    this.logpoints += logpoints.length;
  }

  // Takes V8's call counts and the probe's passes since the last restart, and starts both over, in one turn of lila's thread.
  async restart() {
    const [coverage, passes] = await Promise.all([this.post(COVERAGE), this.evaluate('take()')]);
    return { coverage, passes };
  }

  async quiet(ms) {
    for (;;) {
      const idle = await this.evaluate('idle()');
      if (idle >= ms) return;
      await new Promise((resolve) => setTimeout(resolve, ms - idle));
    }
  }

  // Passes as steps. A function whose first statement is a loop passes its entry once a turn: an
  // entry passed again while its call is under way (at the same stack depth, not returned) is the
  // next turn, not a step.
  steps(passes) {
    const steps = [];
    let live = [];
    for (let i = 0; i < passes.length; i += PASS_FIELDS) {
      const [id, returned, depth, timer] = passes.slice(i, i + PASS_FIELDS);
      const fn = this.functions[id];
      // A stack no deeper than a call under way means that call is over (a return, or a throw).
      live = live.filter((call) => call.depth < depth || (call.depth === depth && call.id === id && !returned));
      if (returned) continue;
      if (fn.tracked) {
        if (live.length > 0 && live[live.length - 1].depth === depth) continue;
        live.push({ id, depth });
      }
      steps.push({ file: path.relative(this.root, fn.file), line: fn.line, name: fn.name, key: fn.key, timer, pass: i / PASS_FIELDS });
    }
    return steps;
  }

  // Functions V8 counted a different number of calls of than there are steps (timers' included).
  disagreements(steps, counted) {
    const seen = new Map();
    for (const step of steps) seen.set(step.key, (seen.get(step.key) || 0) + 1);
    const armed = new Map(this.functions.map((fn) => [fn.key, fn]));
    const out = [];
    for (const fn of counted) {
      const n = seen.get(fn.key) || 0;
      const where = `${path.relative(this.root, fn.file)}:${armed.has(fn.key) ? armed.get(fn.key).line : `offset ${fn.start}`}`;
      if (fn.count !== n) out.push({ where, name: fn.name, calls: fn.count, seen: n });
      seen.delete(fn.key);
    }
    for (const [key, n] of seen) out.push({ where: key, name: '', calls: 0, seen: n });
    return out;
  }
}

/**
 * Runs on lila's thread, installed there by the debugger: what the logpoints' conditions call.
 * Each pass appends its function's number, whether it is a return, the depth of the stack (awaited
 * callers left out) and whether a timer's callback is below it, then answers false: no pause.
 *
 * @param {symbol} key the global it is installed as
 */
function installProbe(key) {
  globalThis[key] = {
    passes: [],
    lastAt: Date.now(),
    pass(id, returned) {
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = Infinity;
      const holder = {};
      Error.captureStackTrace(holder);
      const stack = holder.stack;
      Error.stackTraceLimit = limit;
      const frames = stack.split('\n    at ').filter((frame) => !frame.startsWith('async '));
      this.passes.push(id, returned, frames.length, stack.includes('\n    at listOnTimeout (node:internal/timers:'));
      this.lastAt = Date.now();
      return false;
    },
    take() {
      const passes = this.passes;
      this.passes = [];
      return passes;
    },
    idle() {
      return Date.now() - this.lastAt;
    }
  };
}

// The lib/ functions V8 counted calls of since the last take (`all`: every one it knows, called or not); scripts' top levels left out.
function libFunctions(coverage, libUrl, all = false) {
  const out = [];
  for (const script of coverage.result) {
    if (!script.url.startsWith(libUrl)) continue;
    const file = fileURLToPath(script.url);
    for (const fn of script.functions) {
      const [{ startOffset, endOffset, count }] = fn.ranges;
      if ((count === 0 && !all) || startOffset === 0) continue;
      out.push({ scriptId: script.scriptId, file, name: fn.functionName || '(anonymous)', start: startOffset, end: endOffset, count, key: `${script.url}:${startOffset}` });
    }
  }
  return out;
}

function lineStarts(source) {
  const starts = [0];
  for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function location(scriptId, starts, offset) {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (starts[mid] <= offset) low = mid;
    else high = mid - 1;
  }
  return { scriptId, lineNumber: low, columnNumber: offset - starts[low] };
}

async function startBackend(body, type) {
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  server.keepAliveTimeout = BACKEND_KEEPALIVE_MS;
  server.connections = 0;
  server.on('connection', () => server.connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  server.unref();
  return Object.assign(server, { address: `127.0.0.1:${server.address().port}` });
}

function h1Client(port, compress) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers = compress ? { 'accept-encoding': 'gzip' } : {};
  return {
    get: () => new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve({ reused: req.reusedSocket }) : reject(new Error(`lila answered ${res.statusCode}`))));
      });
      req.on('error', reject);
    }),
    close: () => agent.destroy()
  };
}

function h2Client(port, compress) {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  const headers = { ':path': '/', ...(compress ? { 'accept-encoding': 'gzip' } : {}) };
  let streams = 0;
  return {
    get: () => new Promise((resolve, reject) => {
      const stream = session.request(headers);
      let status = 0;
      stream.on('response', (head) => { status = head[':status']; });
      stream.on('error', reject);
      stream.resume();
      stream.on('end', () => (status === 200 ? resolve({ reused: streams++ > 0 }) : reject(new Error(`lila answered ${status}`))));
    }),
    close: () => session.close()
  };
}
