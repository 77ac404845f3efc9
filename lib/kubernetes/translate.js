'use strict';

const { Backends } = require('./backends');
const { Plan } = require('./plan');
const { translateGateways } = require('./gateways');
const { translateIngresses } = require('./ingresses');

/**
 * What lila makes of the Kubernetes resources it reads: the config text it runs (as a config
 * file's), the certificate files that text names, and the status of every resource it serves.
 *
 * @param {import('./snapshot').Snapshot} snapshot
 * @param {{gatewayClass?: string, gateway?: string, ingressClass?: string, addresses: string[], secretDir: string}} options
 * @returns {{text: string, files: Map<string, Buffer>, status: {gatewayclasses: Map, gateways: Map, httproutes: Map, grpcroutes: Map, ingresses: Map}}}
 */
function translate(snapshot, options) {
  const files = new Map();
  const backends = new Backends(snapshot);
  const plan = new Plan();
  const where = { ...options, files };
  const status = translateGateways(snapshot, backends, plan, where);
  status.ingresses = translateIngresses(snapshot, backends, plan, where);
  const header = [
    'lila --kubernetes: the configuration made of the cluster\'s Gateways, routes, Ingresses,',
    'Services and EndpointSlices; it changes as they do'
  ];
  return { text: plan.text(backends.pools, header), files, status };
}

module.exports = { translate };
