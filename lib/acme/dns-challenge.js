'use strict';

const crypto = require('node:crypto');
const dns = require('node:dns');
const { execFile } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { updateTxt } = require('../dns/update');
const { findZone, nameservers, txtMissing } = require('../dns/lookup');
const { where } = require('../dns/transport');

const DEFAULT_PROPAGATION_MS = 120 * 1000;
const DEFAULT_EXEC_TIMEOUT_MS = 60 * 1000;
// How often the nameservers are asked again while a record is not on all of them.
const POLL_MS = 1000;
// The TTL of the records written: resolvers (the CA's) keep a stale answer no longer.
const RECORD_TTL = 60;
// What is kept of a hook's output for its error message.
const KEEP_OUTPUT = 400;

/**
 * DNS-01 (RFC 8555 §8.4): the `_acme-challenge` TXT record of a name written
 * where the CA reads it, seen on every authoritative server of its zone before
 * the CA is told, and removed after. Written by dynamic update to the zone's
 * primary (`rfc2136`, RFC 2136, signed with TSIG), or by a user's command
 * (`exec`: `FILE present FQDN VALUE`, `FILE cleanup FQDN VALUE`).
 */
class DnsChallenge {
  /**
   * @param {object} settings
   * @param {{kind: 'rfc2136', host: string, port: number} | {kind: 'exec', file: string}} settings.target
   * @param {import('../dns/tsig').TsigKey | null} [settings.tsig] signs the updates (rfc2136)
   * @param {string[]} [settings.resolvers] `ip[:port]`s asked for the zone, its NS and their addresses;
   *   the system's by default
   * @param {number} [settings.nameserverPort] where the zone's nameservers are asked (53)
   * @param {number} [settings.propagationTimeout] ms the record may take to reach every nameserver (120 s)
   * @param {number} [settings.execTimeout] ms a hook may run (60 s)
   * @param {{warn: (line: string) => void, debug: (line: string) => void}} logger
   */
  constructor(settings, logger) {
    this.target = settings.target;
    this.tsig = settings.tsig || null;
    this.resolvers = settings.resolvers ? settings.resolvers.map(serverOf) : null;
    this.nameserverPort = settings.nameserverPort || 53;
    this.propagationTimeout = settings.propagationTimeout === undefined ? DEFAULT_PROPAGATION_MS : settings.propagationTimeout;
    this.execTimeout = settings.execTimeout === undefined ? DEFAULT_EXEC_TIMEOUT_MS : settings.execTimeout;
    this.logger = logger;
  }

  /**
   * Writes the record an authorization asks for.
   *
   * @param {string} identifier the authorization's name (a wildcard's without its `*.`)
   * @param {string} keyAuthorization
   * @returns {Promise<{fqdn: string, value: string}>} what `propagated` and `remove` take
   * @throws {Error} a refused update (DnsUpdateError: the server and the reason), a hook that failed
   */
  async add(identifier, keyAuthorization) {
    const record = {
      fqdn: `_acme-challenge.${identifier}`,
      value: crypto.createHash('sha256').update(keyAuthorization).digest('base64url')
    };
    if (this.target.kind === 'exec') await this.hook('present', record);
    else await this.update('add', record);
    return record;
  }

  /**
   * Waits until every authoritative server of the record's zone answers it.
   *
   * @param {{fqdn: string, value: string}} record
   * @param {AbortSignal} [signal]
   * @returns {Promise<void>}
   * @throws {Error} naming the servers that still do not, after the propagation timeout
   */
  async propagated(record, signal) {
    const resolvers = this.resolvers || systemResolvers();
    const deadline = Date.now() + this.propagationTimeout;
    let missing = [];
    for (;;) {
      try {
        const zone = await findZone(record.fqdn, resolvers);
        const servers = await nameservers(zone, resolvers);
        missing = [];
        for (const server of servers) {
          const asked = { host: server.address, port: this.nameserverPort };
          const problem = await txtMissing(asked, record.fqdn, record.value).catch((err) => err.code || err.message);
          if (problem !== null) missing.push(`${server.name} (${where(asked)}) answers ${problem}`);
        }
        if (missing.length === 0) return;
      } catch (err) {
        missing = [err.message];
      }
      // The last ask comes at the deadline: a timeout shorter than a poll still waits.
      const left = deadline - Date.now();
      if (left <= 0) break;
      await sleep(Math.min(POLL_MS, left), undefined, { signal });
    }
    throw new Error(`the TXT record ${record.fqdn} is not on every nameserver after ${Math.round(this.propagationTimeout / 1000)} s: ${missing.join('; ')}`);
  }

  /**
   * Removes a record written by `add`; a failure is logged, never thrown (the order's outcome stands).
   *
   * @param {{fqdn: string, value: string}} record
   * @returns {Promise<void>}
   */
  async remove(record) {
    try {
      if (this.target.kind === 'exec') await this.hook('cleanup', record);
      else await this.update('delete', record);
    } catch (err) {
      this.logger.warn(`acme: cannot remove the TXT record ${record.fqdn}: ${err.message}`);
    }
  }

  async update(action, record) {
    const server = { host: this.target.host, port: this.target.port };
    // The primary knows its own zones; no resolver is needed to find which it is.
    const zone = await findZone(record.fqdn, [server], { recursion: false });
    await updateTxt(server, { action, zone, name: record.fqdn, value: record.value, ttl: RECORD_TTL, key: this.tsig });
    this.logger.debug(`acme: ${action === 'add' ? 'added' : 'deleted'} the TXT record ${record.fqdn} in ${zone} on ${where(server)}`);
  }

  hook(step, record) {
    const file = this.target.file;
    return new Promise((resolve, reject) => {
      execFile(file, [step, record.fqdn, record.value], { timeout: this.execTimeout, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
        if (err === null) {
          resolve();
          return;
        }
        const said = `${stderr}${stdout}`.trim().slice(0, KEEP_OUTPUT);
        const how = err.killed ? `did not end within ${Math.round(this.execTimeout / 1000)} s`
          : typeof err.code === 'number' ? `exited with ${err.code}` : err.code || err.message;
        reject(new Error(`"${file} ${step} ${record.fqdn}" ${how}${said === '' ? '' : `: ${said}`}`));
      });
    });
  }
}

module.exports = DnsChallenge;

// The resolvers the system uses (resolv.conf), as node:dns reads them.
function systemResolvers() {
  return dns.getServers().map(serverOf);
}

// `ip`, `ip:port`, `[v6]:port` (as --resolver and node:dns write them).
function serverOf(text) {
  const bracket = /^\[(.+)\]:(\d+)$/.exec(text);
  if (bracket !== null) return { host: bracket[1], port: Number(bracket[2]) };
  const colon = text.split(':');
  if (colon.length === 2) return { host: colon[0], port: Number(colon[1]) };
  return { host: text, port: 53 };
}
