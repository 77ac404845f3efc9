'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { ignoredOptions } = require('../lib/config/layer-options');
const { OPTIONS } = require('../lib/config/options');
const { LAYER_NAMES } = require('../lib/layers');
const { parseConfig } = require('../lib/config/config-file');
const { modelOf } = require('../lib/config/config-model');
const { onePoolModel } = require('../lib/config/one-pool-model');
const { cleanup, onCleanup, startTcpBackend, collect, runLila, spawnLila, startLila, nextLine } = require('./helpers');

// Every warning lila wrote, in order.
function warnings(stderr) {
  return stderr.match(/^lila: warn: .*$/gm) || [];
}

describe('options a layer ignores', () => {
  afterEach(cleanup);

  describe('the rule', () => {
    it('names, for each layer, the options given that act only in others', () => {
      const table = [
        { layer: 'tcp', options: { failOn5xx: true, healthPath: '/up', timeout: 5000, connectTimeout: 1000 }, expected: ['timeout', 'fail-on-5xx', 'health-path'] },
        { layer: 'udp', options: { connectTimeout: 1000, headerTimeout: 2000, maxConns: 5 }, expected: ['connect-timeout', 'header-timeout'] },
        { layer: 'tcp', options: { keepAliveTimeout: 1000, http2: false, maxConcurrentStreams: 5, h2Engine: 'node' }, expected: ['keepalive-timeout', 'no-http2', 'max-concurrent-streams', 'h2-engine'] },
        { layer: 'tcp', options: { hostHeader: 'backend', locationRewrite: false, maxHeaderSize: 4096, bodyTimeout: 1000 }, expected: ['body-timeout', 'max-header-size', 'host-header', 'no-location-rewrite'] },
        { layer: 'http', options: { failOn5xx: true, healthPath: '/up', timeout: 5000, keepAliveTimeout: 1000 }, expected: [] },
        { layer: 'tcp', options: { headerTimeout: 2000, maxConns: 5, slowStart: 1000, healthCheck: true, failOn5xx: undefined }, expected: [] }
      ];
      for (const { layer, options, expected } of table) {
        assert.deepEqual(ignoredOptions(options, layer).map((option) => option.name), expected, `${layer} ${JSON.stringify(options)}`);
      }
    });

    it('is the option table\'s: every layers field names layers lila has, fewer than all', () => {
      const layered = OPTIONS.filter((option) => option.layers !== undefined);
      assert.ok(layered.some((option) => option.name === 'fail-on-5xx'));
      for (const option of layered) {
        assert.ok(option.layers.length > 0 && option.layers.length < LAYER_NAMES.length, option.name);
        for (const layer of option.layers) assert.ok(LAYER_NAMES.includes(layer), `${option.name}: ${layer}`);
      }
    });

    it('warns of a config file\'s pools and listeners, naming the line, and of no global option', () => {
      const model = parseConfig([
        '--request-id',
        '--engine node',
        'pool pg least-connections --layer tcp 127.0.0.1:5432',
        '  --health-path /up',
        'pool web round-robin 127.0.0.1:8080 --health-path /up --fail-on-5xx',
        'pool dns round-robin --layer udp 127.0.0.1:53 --connect-timeout 2s',
        'listen 5432 --layer tcp --keepalive-timeout 2s',
        '  route * pg',
        'listen 53 --layer udp',
        '  route * dns',
        'listen 8080 --keepalive-timeout 2s',
        '  route * web'
      ].join('\n'), 'lila.conf');

      assert.deepEqual(model.warnings, [
        'lila.conf:3: "--health-path" is ignored on pool "pg": it acts in the http layer only, and this pool is tcp',
        'lila.conf:6: "--connect-timeout" is ignored on pool "dns": it acts in the http and tcp layers only, and this pool is udp',
        'lila.conf:7: "--keepalive-timeout" is ignored on listen 5432: it acts in the http layer only, and this listener is tcp'
      ]);
    });

    it('warns of a program\'s config and of a command line\'s one pool', () => {
      const model = modelOf({
        pools: { pg: { mode: 'round-robin', servers: ['127.0.0.1:5432'], layer: 'tcp', failOn5xx: true } },
        listeners: [{ port: 5432, layer: 'tcp', routes: [{ match: '*', to: 'pg' }] }]
      });
      assert.deepEqual(model.warnings, ['config: "--fail-on-5xx" is ignored on pool "pg": it acts in the http layer only, and this pool is tcp']);

      const one = onePoolModel({ mode: 'round-robin', servers: ['127.0.0.1:5432'], layer: 'udp', timeout: 5000, requestId: true, udpResponses: 1 });
      assert.deepEqual(one.warnings, ['the command line: "--timeout" is ignored: it acts in the http layer only, and this is --layer udp']);
      assert.deepEqual(onePoolModel({ mode: 'round-robin', servers: ['127.0.0.1:80'], timeout: 5000 }).warnings, []);
    });
  });

  describe('the executable', function () {
    this.timeout(10000);
    let dir;

    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-layer-options-'));
      onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    });

    it('says an http option on a tcp command line is ignored, and serves', async () => {
      const a = await startTcpBackend('A');
      const lila = await startLila(['round-robin', a.address, '--layer', 'tcp', '--fail-on-5xx', '-p', '0', '-a', '127.0.0.1']);

      assert.deepEqual(warnings(lila.stderr), ['lila: warn: the command line: "--fail-on-5xx" is ignored: it acts in the http layer only, and this is --layer tcp']);
      const socket = net.connect(lila.port, '127.0.0.1');
      onCleanup(() => socket.destroy());
      assert.equal(String(await collect(socket)), 'A');
    });

    it('says it on --check of a file whose tcp pool line has --health-path, and not of a global option', async () => {
      const file = path.join(dir, 'lila.conf');
      fs.writeFileSync(file, [
        '--engine node',
        '--request-id',
        'pool pg round-robin --layer tcp 127.0.0.1:5432 --health-path /up',
        'listen 5432 --layer tcp',
        '  route * pg',
        ''
      ].join('\n'));
      const { code, stdout, stderr } = await runLila(['--check', '--config', file]);

      assert.equal(code, 0, stderr);
      assert.equal(stdout, `listen :5432 tcp: 1 route -> pg\nlila: ${file}: good\n`);
      assert.deepEqual(warnings(stderr), [`lila: warn: ${file}:3: "--health-path" is ignored on pool "pg": it acts in the http layer only, and this pool is tcp`]);
    });

    it('says it again on every reload', async () => {
      const a = await startTcpBackend('A');
      const file = path.join(dir, 'lila.conf');
      fs.writeFileSync(file, `pool a round-robin --layer tcp ${a.address} --fail-on-5xx\nlisten 127.0.0.1:0 --layer tcp\n  route * a\n`);
      const lila = spawnLila(['--config', file]);
      await nextLine(lila, /lila: tcp listening on .*/);
      const warning = `lila: warn: ${file}:1: "--fail-on-5xx" is ignored on pool "a": it acts in the http layer only, and this pool is tcp`;
      assert.deepEqual(warnings(lila.stderr), [warning]);

      const reloaded = nextLine(lila, /lila: SIGHUP: .*/);
      lila.child.kill('SIGHUP');
      await reloaded;

      assert.deepEqual(warnings(lila.stderr), [warning, warning]);
    });
  });
});
