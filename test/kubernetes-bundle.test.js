'use strict';

// scripts/kubernetes-bundle.js, without a cluster: the ConfigMap it writes from this clone holds
// lila's one file gzipped, the same bytes at each run, under a ConfigMap's limit. The API server's
// part (stored whole, run by deploy/kubernetes/bundle/'s pod): test/kubernetes/deploy.k8s.js.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { execFileSync } = require('node:child_process');
const { parse } = require('../lib/kubernetes/yaml');
const { bundleConfigMap } = require('../scripts/kubernetes-bundle');

const ROOT = path.join(__dirname, '..');
const SCRIPT = path.join(ROOT, 'scripts', 'kubernetes-bundle.js');
const { version: VERSION } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

describe('scripts/kubernetes-bundle.js', function () {
  this.timeout(60000);
  let dir;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-bundle-test-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes the ConfigMap lila-system/lila-bundle: lila in one file, gzipped, which runs', () => {
    const file = path.join(dir, 'configmap.yaml');
    const said = execFileSync(process.execPath, [SCRIPT, file], { cwd: dir, encoding: 'utf8' });
    assert.match(said, /^configmap\.yaml: ConfigMap lila-system\/lila-bundle, lila \d+\.\d+\.\d+: \d+ bytes, \d+ gzipped\n$/);
    const text = fs.readFileSync(file, 'utf8');
    const manifest = parse(text);
    assert.deepEqual([manifest.apiVersion, manifest.kind, manifest.metadata.name, manifest.metadata.namespace], ['v1', 'ConfigMap', 'lila-bundle', 'lila-system']);
    assert.deepEqual(Object.keys(manifest.binaryData), ['lila.gz']);
    const gzipped = Buffer.from(manifest.binaryData['lila.gz'], 'base64');
    // The API server's limit on a ConfigMap, with room to grow.
    assert.ok(gzipped.length < 768 * 1024, `lila.gz is ${gzipped.length} bytes`);
    const lila = zlib.gunzipSync(gzipped);
    assert.equal(manifest.metadata.annotations['lila-lb.dev/sha256'], crypto.createHash('sha256').update(lila).digest('hex'));
    assert.equal(manifest.metadata.annotations['lila-lb.dev/version'], VERSION);
    const unpacked = path.join(dir, 'lila');
    fs.writeFileSync(unpacked, lila);
    assert.equal(execFileSync(process.execPath, [unpacked, '--version'], { encoding: 'utf8' }).trim(), VERSION);
    // The same clone, the same bytes: `-` writes them to the output.
    assert.equal(execFileSync(process.execPath, [SCRIPT, '-'], { encoding: 'utf8', maxBuffer: 8 * 1024 * 1024 }), text);
  });

  it('gives what it made: the file\'s size and digest, and the manifest', () => {
    const made = bundleConfigMap();
    assert.equal(made.version, VERSION);
    assert.match(made.sha256, /^[0-9a-f]{64}$/);
    assert.ok(made.gzipped < made.bytes / 2, `${made.gzipped} of ${made.bytes}`);
    assert.match(made.text, new RegExp(`^    lila-lb\\.dev/sha256: "${made.sha256}"$`, 'm'));
  });
});
