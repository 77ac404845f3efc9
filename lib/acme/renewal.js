'use strict';

const crypto = require('node:crypto');
const { certificateId } = require('./certificate-id');

// Caddy's ratio: renew when a third of the lifetime is left.
const RENEW_REMAINING = 1 / 3;

/**
 * Whether a certificate is to be replaced: a third of its lifetime or less is left, or it is
 * the one whose renewal time came (`renewed`, its serial). One that another instance renewed
 * meanwhile is a new one, due by its own dates only.
 *
 * @param {{cert: string}} pair
 * @param {string | null} renewed the serial whose renewal time came
 * @returns {boolean}
 */
function isDue(pair, renewed) {
  const leaf = new crypto.X509Certificate(pair.cert);
  return leaf.serialNumber === renewed || Date.now() >= ratioTime(new Date(leaf.validFrom), new Date(leaf.validTo));
}

/**
 * When to renew: a third of the lifetime left, or earlier in the window the CA suggests (ARI).
 *
 * @param {{name: string, notBefore: Date, notAfter: Date}} entry
 * @param {string} cert PEM
 * @param {{renewalInfo: (id: string) => Promise<{start: Date, end: Date} | null>} | null} client
 * @param {{debug: (line: string) => void}} logger
 * @returns {Promise<number>} ms since the epoch
 */
async function renewalTime(entry, cert, client, logger) {
  const at = ratioTime(entry.notBefore, entry.notAfter);
  const id = certificateId(cert);
  if (id === null || client === null) return at;
  try {
    const window = await client.renewalInfo(id);
    if (window === null) return at;
    const start = window.start.getTime();
    const end = window.end.getTime();
    const suggested = start + Math.random() * Math.max(0, end - start);
    return Math.min(at, suggested);
  } catch (err) {
    logger.debug(`acme: no renewal window for ${entry.name}: ${err.message}`);
    return at;
  }
}

/**
 * @param {number} ms
 * @returns {string} `500 ms`, `30 s`, `4 min`, `2 h`
 */
function describeDelay(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7200000) return `${Math.round(ms / 60000)} min`;
  return `${Math.round(ms / 3600000)} h`;
}

module.exports = { isDue, renewalTime, describeDelay };

function ratioTime(notBefore, notAfter) {
  return notAfter.getTime() - (notAfter.getTime() - notBefore.getTime()) * RENEW_REMAINING;
}
