'use strict';

const { checkNames } = require('./csr');
const { layerOf } = require('../layers');

/**
 * A listener as `--acme` reads it: its definition in the config and the certificates it serves
 * (what service/configuration.js's `certified()` gives).
 *
 * @typedef {object} CertifiedListener
 * @property {{layer: string, port: number, options: {tls?: object}, redirectHttp?: {port: number},
 *   routes: {host: string | null}[]}} spec `options.tls`: its `--tls-cert`, if any; `redirectHttp`: its
 *   --redirect-http port, if any
 * @property {{covers: (name: string) => boolean} | null} certificates null: no TLS ends there
 */

/**
 * The names lila obtains certificates for: every exact host routed on an
 * HTTPS listener of a layer that speaks HTTP (http) that no certificate file of that
 * listener covers (a name with a `--tls-cert` keeps it). Wildcard hosts
 * would need DNS-01, and IP addresses or single labels no public CA signs:
 * those are left to the listener's own certificates, each said once.
 *
 * @param {CertifiedListener[]} listeners
 * @returns {{names: string[], skipped: {host: string, why: string}[]}}
 */
function namesToManage(listeners) {
  const names = new Set();
  const skipped = new Map();
  for (const { spec, certificates } of listeners) {
    if (!layerOf(spec.layer).speaksHttp || spec.options.tls === undefined || certificates === null) continue;
    for (const route of spec.routes) {
      const host = route.host;
      if (host === null || names.has(host) || certificates.covers(host)) continue;
      const why = reasonToSkip(host);
      if (why === null) names.add(host);
      else skipped.set(host, why);
    }
  }
  return { names: [...names], skipped: [...skipped].map(([host, why]) => ({ host, why })) };
}

module.exports = { namesToManage };

function reasonToSkip(host) {
  if (host.startsWith('*.')) return 'a wildcard needs the DNS-01 challenge, which lila does not answer';
  try {
    checkNames([host]);
  } catch {
    return 'not a DNS name a public CA signs (an IP address, or a name lila cannot put in a request)';
  }
  if (!host.includes('.')) return 'a single-label name no public CA signs';
  return null;
}
