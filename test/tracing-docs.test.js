'use strict';

// doc/tracing.md as a reader runs it: its config file with its curl (a collector and backends of
// the test's own in the places of the doc's), its command for a hosted collector, the line lila
// writes when the collector is lost, and the /metrics families it shows.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { cleanup, onCleanup, runLila, spawnLila, untilWritten, startHttpBackend, refusingPort } = require('./helpers');
const { codeBlocks, commandsOf, otherCommands, shellWords } = require('./doc-blocks');
const { startCollector } = require('./otlp-collector');

const TEXT = fs.readFileSync(path.join(__dirname, '..', 'doc', 'tracing.md'), 'utf8');
const BLOCKS = codeBlocks(TEXT);

// The doc's config, with the test's collector, backends and a free port in the places of its own.
function docConfig(collector, backends) {
  const block = BLOCKS.find((candidate) => candidate.lang === '' && candidate.lines[0]?.text === '# traced.conf');
  assert.ok(block !== undefined, 'doc/tracing.md has a block starting "# traced.conf"');
  let backend = 0;
  const text = block.lines.slice(1).map(({ text: line }) => line
    .replace('http://127.0.0.1:4318', collector)
    .replace(/127\.0\.0\.1:800\d/g, () => backends[backend++ % backends.length])
    .replace(/^listen 8080$/, 'listen 127.0.0.1:0')).join('\n') + '\n';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-tracing-doc-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'traced.conf');
  fs.writeFileSync(file, text);
  return file;
}

async function startDocLila(file, extra = []) {
  const lila = spawnLila(['--config', file, ...extra]);
  const port = await untilWritten(lila, () => /^lila: http listening on 127\.0\.0\.1:(\d+)/m.exec(lila.stderr)?.[1], 'listening line', 10000);
  return Object.assign(lila, { port: Number(port) });
}

describe('doc/tracing.md', function () {
  this.timeout(20000);
  afterEach(cleanup);

  it("runs its config and its curl: the client's trace continued, the backend's parent lila's CLIENT span", async () => {
    const collector = await startCollector();
    const parents = [];
    const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name, (req, res) => {
      parents.push(req.headers.traceparent);
      res.end(name);
    })));
    const file = docConfig(collector.url, backends.map((backend) => backend.address));
    const lila = await startDocLila(file);
    const [curl] = otherCommands(BLOCKS).filter((command) => command.program === 'curl');
    const words = shellWords(curl.text.replace('127.0.0.1:8080', `127.0.0.1:${lila.port}`), {}).slice(1);
    await promisify(execFile)('curl', words);
    lila.child.kill('SIGTERM');
    assert.equal((await lila.closed).code, 0, lila.stderr);

    const spans = collector.spans();
    const server = spans.find((span) => span.kind === 2);
    const client = spans.find((span) => span.kind === 3);
    assert.equal(server.name, 'GET /api/*');
    assert.equal(server.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(server.parentSpanId, '00f067aa0ba902b7');
    assert.equal(client.parentSpanId, server.spanId);
    assert.deepEqual(parents, [`00-4bf92f3577b34da6a3ce929d0e0e4736-${client.spanId}-01`]);
    const resource = collector.requests[0].message.resourceSpans[0].resource.attributes;
    assert.deepEqual(resource.find((a) => a.key === 'service.name').value, { stringValue: 'edge' });
  });

  it('checks its command for a hosted collector, and refuses a trace option without --otlp-endpoint', async () => {
    const file = docConfig('http://127.0.0.1:4318', ['127.0.0.1:1', '127.0.0.1:2']);
    const commands = commandsOf(BLOCKS, {});
    assert.deepEqual(commands.map((command) => command.args[0]), ['--config', '--config']);
    for (const { args } of commands) {
      const { code, stderr } = await runLila(['--check', ...args.map((arg) => (arg === 'traced.conf' ? file : arg))]);
      assert.equal(code, 0, stderr);
    }
    const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', '--trace-sample', '0.1']);
    assert.equal(code, 2);
    assert.match(stderr, /^lila: "--trace-sample" goes with --otlp-endpoint URL/);
  });

  it('writes its line when the collector is lost, and /metrics has its families', async () => {
    const port = await refusingPort();
    const backends = await Promise.all(['A', 'B'].map((name) => startHttpBackend(name)));
    const file = docConfig(`http://127.0.0.1:${port}`, backends.map((backend) => backend.address));
    const lila = await startDocLila(file, ['--admin', '127.0.0.1:0']);
    const admin = Number(await untilWritten(lila, () => /^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/m.exec(lila.stderr)?.[1], 'admin line', 10000));
    await promisify(execFile)('curl', ['-s', `http://127.0.0.1:${lila.port}/api/x`]);
    const line = await untilWritten(lila, () => /^lila: warn: traces: the collector at .* is lost .*$/m.exec(lila.stderr)?.[0], 'lost line', 15000);
    const said = TEXT.split('\n').find((text) => text.startsWith('lila: warn: traces: the collector at'));
    assert.equal(line, said.replaceAll('4318', String(port)));
    const { stdout: metrics } = await promisify(execFile)('curl', ['-s', `http://127.0.0.1:${admin}/metrics`]);
    const families = TEXT.split('\n').filter((text) => /^lila_otlp_/.test(text)).map((text) => text.split(' ')[0]);
    assert.equal(families.length, 5);
    for (const name of families) assert.match(metrics, new RegExp(`^# TYPE ${name} counter$`, 'm'));
  });
});
