'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { readOptions } = require('../lib/config/options');
const { parseOtlpHeaders, parseServiceName, parseTraceSample, parseOtlpEndpoint } = require('../lib/config/tracing-values');
const { runLila, cleanup, onCleanup } = require('./helpers');

const TRACING = ['--otlp-endpoint', 'http://127.0.0.1:4318', '--otlp-protocol', 'http/json', '--otlp-header', 'Authorization=Bearer 1',
  '--service-name', 'edge', '--trace-sample', '0.5'];

describe('tracing options', () => {
  afterEach(cleanup);

  describe('until spans are made (issue 50)', () => {
    for (const [flag, value] of [['--otlp-endpoint', 'http://127.0.0.1:4318'], ['--trace-sample', '0.01'], ['--otlp-header', 'A=b']]) {
      it(`refuses ${flag} in one line, exit 2, without LILA_EXPERIMENTAL_TRACING=1`, async () => {
        const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', flag, value], { env: { LILA_EXPERIMENTAL_TRACING: undefined } });

        assert.equal(code, 2);
        assert.equal(stderr, `lila: ${flag}: traces are not exported yet (issue 50)\n`);
      });
    }

    it('refuses them on a config file\'s line too, naming it', async () => {
      const file = configFile('--otlp-endpoint http://127.0.0.1:4318\npool web round-robin 127.0.0.1:1\nlisten 0\n  route * web\n');
      const { code, stderr } = await runLila(['--check', '--config', file], { env: { LILA_EXPERIMENTAL_TRACING: undefined } });

      assert.equal(code, 2);
      assert.equal(stderr, `lila: ${file}:1: --otlp-endpoint: traces are not exported yet (issue 50)\n`);
    });

    it('reads them with LILA_EXPERIMENTAL_TRACING=1: a config file with all of them checks good', async () => {
      const lines = [];
      for (let i = 0; i < TRACING.length; i += 2) lines.push(`${TRACING[i]} "${TRACING[i + 1]}"`);
      const file = configFile(`${lines.join('\n')}\npool web round-robin 127.0.0.1:1\nlisten 0\n  route * web\n`);
      const { code, stdout, stderr } = await runLila(['--check', '--config', file], { env: { LILA_EXPERIMENTAL_TRACING: '1' } });

      assert.equal(code, 0, stderr);
      assert.match(stdout, /: good\n$/);
    });

    it('reads every value as lila uses it, with LILA_EXPERIMENTAL_TRACING=1', () => {
      experimentalFor();
      const read = readOptions({
        'otlp-endpoint': 'http://127.0.0.1:4318', 'otlp-protocol': 'http/json', 'otlp-header': ['Authorization=Bearer 1', 'X-Tenant= a b '],
        'service-name': 'edge', 'trace-sample': '0.25'
      });

      assert.deepEqual(read, {
        proxy: {},
        actions: {},
        'otlp-endpoint': 'http://127.0.0.1:4318',
        'otlp-protocol': 'http/json',
        'otlp-header': { authorization: 'Bearer 1', 'x-tenant': 'a b' },
        'service-name': 'edge',
        'trace-sample': 0.25
      });
      assert.throws(() => readOptions({ 'otlp-protocol': 'grpc' }), { message: '"--otlp-protocol" must be "http/protobuf" or "http/json", received "grpc"' });
    });
  });

  describe('values', () => {
    it('--otlp-endpoint: an http or https URL, without credentials', () => {
      assert.equal(parseOtlpEndpoint('https://otel.example.com/base', '--otlp-endpoint'), 'https://otel.example.com/base');
      assert.throws(() => parseOtlpEndpoint('otel:4318', '--otlp-endpoint'), { code: 'LILA_ERR_INVALID_OPTION', message: /^"--otlp-endpoint" must be an http/ });
      assert.throws(() => parseOtlpEndpoint('http://u:p@h:4318', '--otlp-endpoint'), { message: /credentials go in --otlp-header/ });
    });

    it('--otlp-header: NAME=VALUE, no field lila sets, no name twice, no control characters', () => {
      const refused = (values, pattern) => assert.throws(() => parseOtlpHeaders(values, '--otlp-header'), { code: 'LILA_ERR_INVALID_OPTION', message: pattern });

      assert.deepEqual(parseOtlpHeaders(['api-key=x=y'], '--otlp-header'), { 'api-key': 'x=y' });
      refused(['Authorization'], /must be NAME=VALUE/);
      refused(['Bad Name=1'], /must be NAME=VALUE/);
      refused(['X-A=1\r\nHost: evil'], /must be NAME=VALUE/);
      refused(['X-A='], /must be NAME=VALUE/);
      refused(['Content-Type=text/plain'], /cannot set Content-Type: lila sets it/);
      refused(['X-A=1', 'x-a=2'], /gives x-a twice/);
    });

    it('--service-name and --trace-sample', () => {
      assert.equal(parseServiceName('checkout edge', '--service-name'), 'checkout edge');
      assert.throws(() => parseServiceName('', '--service-name'), { message: /must be 1 to 255 printable ASCII characters/ });
      assert.throws(() => parseServiceName('a\nb', '--service-name'), { message: /must be 1 to 255/ });
      for (const [text, ratio] of [['0', 0], ['1', 1], ['0.01', 0.01], ['.5', 0.5], ['1.0', 1]]) assert.equal(parseTraceSample(text, '--trace-sample'), ratio);
      for (const text of ['1.5', '-0.1', '1e-2', '', 'half', '0x1']) {
        assert.throws(() => parseTraceSample(text, '--trace-sample'), { message: `"--trace-sample" must be a number from 0 to 1, as in 0.01, received "${text}"` });
      }
    });
  });
});

// A config file in a directory removed at cleanup.
function configFile(text) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-tracing-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'lila.conf');
  fs.writeFileSync(file, text);
  return file;
}

// LILA_EXPERIMENTAL_TRACING=1 in this process until cleanup, as it was after.
function experimentalFor() {
  const was = process.env.LILA_EXPERIMENTAL_TRACING;
  process.env.LILA_EXPERIMENTAL_TRACING = '1';
  onCleanup(() => {
    if (was === undefined) delete process.env.LILA_EXPERIMENTAL_TRACING;
    else process.env.LILA_EXPERIMENTAL_TRACING = was;
  });
}
