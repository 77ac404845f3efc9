#!/usr/bin/env node
'use strict';

// Makes deploy/kubernetes/bundle/configmap.yaml: the ConfigMap lila-system/lila-bundle whose
// binaryData `lila.gz` is lila in one file (scripts/build.js, as `npm run bundle` builds it),
// gzipped. deploy/kubernetes/bundle/deployment.yaml's init container unpacks it with Node's
// zlib and the pod runs it with the official node image: a cluster needs nothing published,
// no registry and no network at start, only this file applied (doc/kubernetes.md).
//
// The same clone gives the same bytes (the build is deterministic, and gzip's header carries no
// time). A ConfigMap holds 1 MiB at most (lila gzipped is well under half of it): over that,
// the script fails rather than write what the API server would refuse. The file is applied with
// `kubectl apply --server-side`: a client-side apply copies the object into an annotation, and
// annotations hold 256 KiB in all.
//
// Usage: node scripts/kubernetes-bundle.js [file | -]
//   (default deploy/kubernetes/bundle/configmap.yaml; `-` writes to stdout)

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { build } = require('./build');

const ROOT = path.join(__dirname, '..');
const DEFAULT_OUTPUT = path.join(ROOT, 'deploy', 'kubernetes', 'bundle', 'configmap.yaml');
const NAME = 'lila-bundle';
const NAMESPACE = 'lila-system';
const KEY = 'lila.gz';
// The API server's limit on a ConfigMap's data and binaryData together (bytes, decoded).
const CONFIGMAP_LIMIT = 1024 * 1024;

/**
 * Builds lila in one file and makes the ConfigMap manifest that carries it gzipped.
 *
 * @param {{root?: string}} [options] root: the clone to build (default this one)
 * @returns {{text: string, version: string, bytes: number, gzipped: number, sha256: string}}
 *   text: the manifest (YAML); bytes and sha256: of the unpacked file; gzipped: lila.gz's size
 */
function bundleConfigMap(options = {}) {
  const root = options.root || ROOT;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-bundle-'));
  let bundle;
  try {
    bundle = fs.readFileSync(build({ root, output: path.join(dir, 'lila') }).output);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const gzipped = zlib.gzipSync(bundle, { level: zlib.constants.Z_BEST_COMPRESSION });
  if (gzipped.length > CONFIGMAP_LIMIT) {
    throw new Error(`lila gzipped is ${gzipped.length} bytes, more than the ${CONFIGMAP_LIMIT} a ConfigMap holds`);
  }
  const sha256 = crypto.createHash('sha256').update(bundle).digest('hex');
  const text = [
    `# lila ${version} in one file (scripts/build.js), gzipped: made by scripts/kubernetes-bundle.js; do not edit.`,
    '# deploy/kubernetes/bundle/deployment.yaml runs it. Apply with `kubectl apply --server-side` (see doc/kubernetes.md).',
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    `  name: ${NAME}`,
    `  namespace: ${NAMESPACE}`,
    '  labels:',
    '    app.kubernetes.io/name: lila',
    '  annotations:',
    `    lila-lb.dev/version: "${version}"`,
    `    lila-lb.dev/sha256: "${sha256}"`,
    'binaryData:',
    `  ${KEY}: ${gzipped.toString('base64')}`,
    ''
  ].join('\n');
  return { text, version, bytes: bundle.length, gzipped: gzipped.length, sha256 };
}

module.exports = { bundleConfigMap };

if (require.main === module) {
  try {
    const target = process.argv[2] || DEFAULT_OUTPUT;
    const made = bundleConfigMap();
    if (target === '-') {
      process.stdout.write(made.text);
    } else {
      // Written beside and renamed over, as scripts/build.js writes: never half a manifest.
      const temporary = `${target}.${process.pid}.tmp`;
      fs.writeFileSync(temporary, made.text);
      fs.renameSync(temporary, target);
      process.stdout.write(`${path.relative(process.cwd(), target) || target}: ConfigMap ${NAMESPACE}/${NAME}, lila ${made.version}: ` +
        `${made.bytes} bytes, ${made.gzipped} gzipped\n`);
    }
  } catch (err) {
    process.stderr.write(`kubernetes-bundle: ${err.message}\n`);
    process.exitCode = 1;
  }
}
