'use strict';

const crypto = require('node:crypto');
const { TYPES, CLASSES, OPCODES, RCODES, encodeMessage, txtData, rcodeName } = require('./message');
const { signMessage, verifyResponse } = require('./tsig');
const { exchange, where } = require('./transport');

/**
 * An update a server refused or could not be sent: `reason` is the RCODE or
 * TSIG error's name (`REFUSED`, `NOTAUTH`, `BADSIG`, `BADKEY`...) or what
 * failed on the way (a timeout, a connection refused).
 */
class DnsUpdateError extends Error {
  /**
   * @param {string} server `host:port`
   * @param {string} reason
   */
  constructor(server, reason) {
    super(`the DNS server ${server} refused the update: ${reason}`);
    this.name = 'DnsUpdateError';
    this.server = server;
    this.reason = reason;
  }
}

/**
 * Adds or deletes one TXT record by dynamic update (RFC 2136), over TCP,
 * signed with TSIG when a key is given (RFC 8945), and checks the answer:
 * its RCODE, and its own TSIG. A delete names the record's value, so that
 * others of the same name (another validation's) stay.
 *
 * @param {{host: string, port: number}} server the zone's primary, which takes updates
 * @param {object} change
 * @param {'add' | 'delete'} change.action
 * @param {string} change.zone the zone the name is in
 * @param {string} change.name
 * @param {string} change.value
 * @param {number} [change.ttl] seconds (60)
 * @param {import('./tsig').TsigKey | null} [change.key]
 * @param {number} [change.timeout] ms
 * @returns {Promise<void>}
 * @throws {DnsUpdateError}
 */
async function updateTxt(server, { action, zone, name, value, ttl = 60, key = null, timeout }) {
  const record = action === 'add'
    ? { name, type: TYPES.TXT, class: CLASSES.IN, ttl, data: txtData(value) }
    : { name, type: TYPES.TXT, class: CLASSES.NONE, ttl: 0, data: txtData(value) };
  const message = encodeMessage({
    id: crypto.randomInt(0, 65536),
    flags: { opcode: OPCODES.UPDATE },
    questions: [{ name: zone, type: TYPES.SOA, class: CLASSES.IN }],
    authorities: [record]
  });
  const signed = key === null ? { signed: message, mac: null } : signMessage(message, key);
  let answer;
  try {
    answer = await exchange(server, signed.signed, { tcp: true, timeout });
  } catch (err) {
    throw new DnsUpdateError(where(server), err.code || err.message);
  }
  const { buffer, message: response } = answer;
  // A TSIG error (BADSIG, BADKEY, BADTIME) comes with NOTAUTH: the TSIG's own error says more.
  const tsigProblem = key === null ? null : verifyResponse(buffer, response, key, signed.mac);
  if (response.flags.rcode !== RCODES.NOERROR) {
    const reason = rcodeName(response.flags.rcode);
    throw new DnsUpdateError(where(server), tsigProblem !== null && tsigProblem !== 'no TSIG' ? `${reason} (${tsigProblem})` : reason);
  }
  if (tsigProblem !== null) throw new DnsUpdateError(where(server), `its answer is not signed right (${tsigProblem})`);
}

module.exports = { updateTxt, DnsUpdateError };
