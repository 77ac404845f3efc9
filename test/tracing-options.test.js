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

  describe('reading', () => {
    for (const [flag, value] of [['--trace-sample', '0.01'], ['--otlp-header', 'A=b'], ['--service-name', 'edge']]) {
      it(`refuses ${flag} without --otlp-endpoint in one line, exit 2`, async () => {
        const { code, stderr } = await runLila(['round-robin', '127.0.0.1:1', flag, value]);

        assert.equal(code, 2);
        assert.equal(stderr.split('\n')[0], `lila: "${flag}" goes with --otlp-endpoint URL: without it, lila records no traces`);
      });
    }

    it('a config file with all of them checks good', async () => {
      const lines = [];
      for (let i = 0; i < TRACING.length; i += 2) lines.push(`${TRACING[i]} "${TRACING[i + 1]}"`);
      const file = configFile(`${lines.join('\n')}\npool web round-robin 127.0.0.1:1\nlisten 0\n  route * web\n`);
      const { code, stdout, stderr } = await runLila(['--check', '--config', file]);

      assert.equal(code, 0, stderr);
      assert.match(stdout, /: good\n$/);
    });

    it('reads every value as lila uses it', () => {
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

