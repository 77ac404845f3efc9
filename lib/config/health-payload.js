'use strict';

const { LilaError, codes } = require('../errors');

const HEX = /^(?:[0-9a-fA-F]{2})*$/;
// A host name's labels: letters, digits, hyphens and underscores, 63 bytes each, 253 in all.
const LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;
// The query id of a check's DNS query: any will do, the answer is not read.
const QUERY_ID = 0x6c6c;

/**
 * `--health-payload`: the datagram a udp pool's health check sends, `udp:HEX`
 * (those bytes) or `dns:NAME` (a DNS query, RFC 1035, for NAME's A record,
 * recursion desired).
 *
 * @param {string} text
 * @param {string} flag the option as the user knows it
 * @returns {Buffer}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option and what was received
 */
function parseHealthPayload(text, flag) {
  const bad = (why) => new LilaError(codes.INVALID_OPTION, `"${flag}" ${why}, received "${text}"`);
  if (typeof text !== 'string') throw bad('must be udp:HEX or dns:NAME');
  if (text.startsWith('udp:')) {
    const hex = text.slice(4);
    if (!HEX.test(hex) || hex.length > 2 * 65507) throw bad('must give its bytes as pairs of hex digits (udp:HEX)');
    return Buffer.from(hex, 'hex');
  }
  if (text.startsWith('dns:')) {
    const name = text.slice(4).replace(/\.$/, '');
    const labels = name === '' ? [] : name.split('.');
    if (name.length > 253 || !labels.every((label) => LABEL.test(label))) throw bad('must name a host (dns:NAME)');
    return dnsQuery(labels);
  }
  throw bad('must be udp:HEX or dns:NAME');
}

module.exports = { parseHealthPayload };

function dnsQuery(labels) {
  // id, flags (RD), one question, no answer, authority or additional records.
  const header = Buffer.from([QUERY_ID >> 8, QUERY_ID & 0xff, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
  const name = Buffer.concat([...labels.map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label, 'ascii')])), Buffer.from([0])]);
  // QTYPE A, QCLASS IN.
  return Buffer.concat([header, name, Buffer.from([0, 1, 0, 1])]);
}
