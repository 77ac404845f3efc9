'use strict';

// A fleet's member on this machine, for the tests that need one: `lila --store URL` with an admin
// API of its own, its stored configuration listening on port 0 (so that several share a machine).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { onCleanup, spawnLila, untilWritten } = require('./helpers');

/**
 * Starts a member and resolves once its admin API and its (first) http listener listen.
 *
 * @param {{url: string}} etcd what test/etcd.js's startEtcd gave
 * @param {{stateDir?: string, token?: string, args?: string[]}} [options] stateDir: a new one by default
 * @returns {Promise<ReturnType<typeof spawnLila> & {admin: number, port: number, stateDir: string}>}
 */
async function startMember(etcd, { stateDir = temporaryDirectory(), token, args = [] } = {}) {
  const lila = spawnLila(['--store', etcd.url, '--state-dir', stateDir, '--admin', '127.0.0.1:0',
    ...(token === undefined ? [] : ['--admin-token', token]), ...args]);
  const admin = await untilWritten(lila, () => {
    const match = /^lila: admin API listening on http:\/\/127\.0\.0\.1:(\d+)$/m.exec(lila.stderr);
    return match === null ? null : Number(match[1]);
  }, 'admin line', 10000);
  const port = await untilWritten(lila, () => {
    const match = /^lila: http listening on 127\.0\.0\.1:(\d+)/m.exec(lila.stderr);
    return match === null ? null : Number(match[1]);
  }, 'listening line', 10000);
  return Object.assign(lila, { admin, port, stateDir });
}

/** @returns {string} a directory removed at cleanup */
function temporaryDirectory() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-fleet-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

module.exports = { startMember, temporaryDirectory };
