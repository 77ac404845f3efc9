'use strict';

// A TLSRoute's or a TCPRoute's rules as lila's tcp routes: a TLSRoute's hostnames are matched
// against the server name a client asks for (SNI, read from its ClientHello when the listener
// passes TLS through), a TCPRoute takes every connection; each rule's backendRefs a pool or a
// weighted split of `--layer tcp` pools.

/**
 * @param {object} route a TLSRoute or a TCPRoute
 * @param {'TLSRoute' | 'TCPRoute'} kind
 * @param {import('./backends').Backends} backends
 * @returns {{rules: {matches: {path: string, conditions: string[]}[], words: string[], pools: string[]}[],
 *   unsupported: string | null, refs: {reason: string, message: string} | null}} as route-rules.js's rulesOf
 */
function streamRulesOf(route, kind, backends) {
  const from = { kind, namespace: route.metadata.namespace };
  const result = { rules: [], unsupported: null, refs: null };
  const rules = route.spec.rules || [];
  // A connection is not a request: nothing tells one rule from another but the route's hostnames.
  if (rules.length > 1) result.unsupported = `lila sends a ${kind}'s connections by one rule, and this one has ${rules.length}`;
  for (const rule of rules.slice(0, 1)) {
    const refs = (rule.backendRefs || []).map((ref) => backends.resolve(ref, from, { tcp: true }));
    const bad = refs.find((item) => item.problem !== null);
    if (bad !== undefined) result.refs = bad.problem;
    const weights = new Map();
    for (const ref of refs) if (ref.pool !== null && ref.weight > 0) weights.set(ref.pool, (weights.get(ref.pool) || 0) + ref.weight);
    // A connection with nowhere to go is closed, as a tcp route with no pool would: none is written.
    if (weights.size === 0) continue;
    const words = weights.size === 1 ? [...weights.keys()] : [...weights].map(([pool, weight]) => `${pool}=${weight}`);
    result.rules.push({ matches: [{ path: '', conditions: [] }], words, pools: [...weights.keys()] });
  }
  return result;
}

module.exports = { streamRulesOf };
