'use strict';

const { durationMs } = require('./words');

// An HTTPRoute's or a GRPCRoute's rules as lila's route lines: each match a MATCH (path) and
// its conditions (--match-header, --match-query, --match-method), each rule its TARGET (a pool,
// a weighted split) and its options (the filters). Written once per listener the route attaches
// to: a redirect keeps that listener's port.

const DEFAULT_PORT = { http: 80, https: 443 };
const HTTP_FILTERS = new Set(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestRedirect', 'URLRewrite', 'RequestMirror']);
const GRPC_FILTERS = new Set(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestMirror']);

/**
 * @param {object} route an HTTPRoute or a GRPCRoute
 * @param {'HTTPRoute' | 'GRPCRoute'} kind
 * @param {import('./backends').Backends} backends
 * @param {{port: number, scheme: 'http' | 'https'}} listener
 * @returns {{rules: {matches: {path: string, conditions: string[]}[], words: string[], pools: string[]}[],
 *   unsupported: string | null, refs: {reason: string, message: string} | null}}
 *   words: the rule's TARGET and options; unsupported: why the route cannot be accepted;
 *   refs: the first backendRef that does not resolve
 */
function rulesOf(route, kind, backends, listener) {
  const from = { kind, namespace: route.metadata.namespace };
  const grpc = kind === 'GRPCRoute';
  const result = { rules: [], unsupported: null, refs: null };
  const unsupported = (message) => {
    if (result.unsupported === null) result.unsupported = message;
  };
  for (const rule of route.spec.rules || [{}]) {
    const matches = (rule.matches === undefined || rule.matches.length === 0 ? [{}] : rule.matches)
      .map((match) => (grpc ? grpcMatch(match, unsupported) : httpMatch(match, unsupported)));
    const options = [];
    const pools = [];
    let answered = false;
    for (const filter of rule.filters || []) {
      if (!(grpc ? GRPC_FILTERS : HTTP_FILTERS).has(filter.type)) {
        unsupported(`the filter ${filter.type} is not one lila implements`);
        continue;
      }
      if (filter.type === 'RequestHeaderModifier') options.push(...headerEdits('--request-header', filter.requestHeaderModifier, unsupported));
      else if (filter.type === 'ResponseHeaderModifier') options.push(...headerEdits('--response-header', filter.responseHeaderModifier, unsupported));
      else if (filter.type === 'RequestRedirect') {
        options.push(...redirect(filter.requestRedirect || {}, listener, unsupported));
        answered = true;
      } else if (filter.type === 'URLRewrite') options.push(...rewrite(filter.urlRewrite || {}, matches, unsupported));
      else if (filter.type === 'RequestMirror') {
        const mirror = filter.requestMirror || {};
        const resolved = backends.resolve({ ...mirror.backendRef, weight: 1 }, from, {});
        if (resolved.problem !== null) result.refs = result.refs || resolved.problem;
        else if (resolved.pool !== null && backends.pools.get(resolved.pool).servers.some((server) => server.endsWith(',h2'))) {
          unsupported(`lila mirrors to HTTP/1.1 pods, and ${mirror.backendRef.name} speaks h2c`);
        } else if (resolved.pool !== null) {
          options.push('--mirror', `${resolved.pool}=${percentOf(mirror)}`);
          pools.push(resolved.pool);
        }
      }
    }
    const timeouts = rule.timeouts || {};
    const limits = [timeouts.backendRequest, timeouts.request].map(durationMs).filter((ms) => ms !== null && ms > 0);
    const timeoutMs = limits.length === 0 ? null : Math.min(...limits);
    let target = [];
    if (!answered) {
      const refs = (rule.backendRefs || []).map((ref) => backends.resolve(ref, from, { grpc, timeoutMs }));
      const bad = refs.find((item) => item.problem !== null);
      if (bad !== undefined) result.refs = result.refs || bad.problem;
      target = targetOf(refs, options);
      for (const ref of refs) if (ref.pool !== null && ref.weight > 0) pools.push(ref.pool);
    }
    result.rules.push({ matches, words: [...target, ...options], pools });
  }
  return result;
}

// A rule's TARGET: its pools by weight; a fixed answer when it has none to send to.
function targetOf(refs, options) {
  const weights = new Map();
  for (const ref of refs) {
    if (ref.pool !== null && ref.weight > 0) weights.set(ref.pool, (weights.get(ref.pool) || 0) + ref.weight);
  }
  if (weights.size === 1) return [...weights.keys()];
  if (weights.size > 1) return [...weights].map(([pool, weight]) => `${pool}=${weight}`);
  // Every backend invalid is 500, as the spec says; valid ones without a ready endpoint, 503.
  const invalid = refs.length === 0 || refs.every((ref) => ref.problem !== null || ref.weight === 0);
  options.unshift('--respond', invalid ? '500' : '503', invalid ? 'no valid backend for this route rule' : 'no ready endpoint for this route rule');
  return [];
}

function httpMatch(match, unsupported) {
  const conditions = [];
  const path = match.path || { type: 'PathPrefix', value: '/' };
  let pathWord = '';
  const value = path.value === undefined ? '/' : path.value;
  if (path.type === 'Exact') pathWord = `=${value}`;
  else if (path.type === 'RegularExpression') pathWord = `~${compiled(whole(value), unsupported)}`;
  else if (path.type === 'PathPrefix' || path.type === undefined) pathWord = value === '/' ? '' : value.replace(/\/+$/, '');
  else unsupported(`the path match type ${path.type} is not one lila implements`);
  for (const header of match.headers || []) conditions.push('--match-header', `${header.name}: ${valueOf(header, unsupported)}`);
  for (const query of match.queryParams || []) conditions.push('--match-query', `${query.name}=${valueOf(query, unsupported)}`);
  if (match.method !== undefined) conditions.push('--match-method', match.method);
  return { path: pathWord, prefix: path.type === 'PathPrefix' || path.type === undefined, conditions };
}

// GRPCRoute's method match: the path /service/method, exactly or by regular expressions.
function grpcMatch(match, unsupported) {
  const conditions = [];
  for (const header of match.headers || []) conditions.push('--match-header', `${header.name}: ${valueOf(header, unsupported)}`);
  const method = match.method;
  if (method === undefined || (method.service === undefined && method.method === undefined)) return { path: '', prefix: true, conditions };
  if (method.type === 'RegularExpression') {
    return { path: `~${compiled(`^/${method.service || '[^/]+'}/${method.method || '[^/]+'}$`, unsupported)}`, prefix: false, conditions };
  }
  if (method.service !== undefined && method.method !== undefined) return { path: `=/${method.service}/${method.method}`, prefix: false, conditions };
  if (method.service !== undefined) return { path: `/${method.service}`, prefix: true, conditions };
  return { path: `~^/[^/]+/${escapeRegExp(method.method)}$`, prefix: false, conditions };
}

// A header's or a query parameter's value: exact, or a regular expression that must match whole.
function valueOf(match, unsupported) {
  if (match.type === 'RegularExpression') return `~${compiled(whole(match.value), unsupported)}`;
  if (match.type !== undefined && match.type !== 'Exact') unsupported(`the match type ${match.type} is not one lila implements`);
  if (String(match.value).startsWith('~')) unsupported(`a value starting with "~" (${match.value}) cannot be matched exactly`);
  return match.value;
}

function headerEdits(option, modifier = {}, unsupported) {
  const words = [];
  const value = (item) => {
    if (/[{}]/.test(item.value)) unsupported(`a header value with "{" or "}" (${item.name}) is not one lila writes as given`);
    return item.value;
  };
  for (const item of modifier.set || []) words.push(option, `${item.name}: ${value(item)}`);
  for (const item of modifier.add || []) words.push(option, `+${item.name}: ${value(item)}`);
  for (const name of modifier.remove || []) words.push(option, `-${name}`);
  return words;
}

function redirect(filter, listener, unsupported) {
  const scheme = filter.scheme || null;
  const host = filter.hostname || '{host}';
  // No port named: the new scheme's own when the scheme changes, else the listener's.
  let port = filter.port !== undefined ? filter.port : scheme !== null ? null : listener.port;
  const portScheme = scheme || listener.scheme;
  if (port === DEFAULT_PORT[portScheme]) port = null;
  let path = '{uri}';
  if (filter.path !== undefined) {
    if (filter.path.type === 'ReplaceFullPath') path = filter.path.replaceFullPath;
    else unsupported(`RequestRedirect's path ${filter.path.type} is not one lila implements (ReplaceFullPath is)`);
  }
  const url = `${portScheme}://${host}${port === null ? '' : `:${port}`}${path}`;
  return ['--redirect', url, String(filter.statusCode || 302)];
}

function rewrite(filter, matches, unsupported) {
  const words = [];
  if (filter.hostname !== undefined) words.push('--request-header', `Host: ${filter.hostname}`);
  const path = filter.path;
  if (path === undefined) return words;
  if (path.type === 'ReplaceFullPath') return [...words, '--rewrite', '^.*$', path.replaceFullPath];
  if (path.type !== 'ReplacePrefixMatch') {
    unsupported(`URLRewrite's path ${path.type} is not one lila implements`);
    return words;
  }
  if (!matches.every((match) => match.prefix)) {
    unsupported('URLRewrite\'s ReplacePrefixMatch needs PathPrefix matches');
    return words;
  }
  const replacement = path.replacePrefixMatch.replace(/\/+$/, '');
  const prefixes = [...new Set(matches.map((match) => match.path))];
  // Replaced by /: the path after the prefix, which --strip-prefix gives (a rule of / has none to strip).
  if (replacement === '') return prefixes.some((prefix) => prefix !== '') ? [...words, '--strip-prefix'] : words;
  // Else the prefix replaced on its segment boundary: /foo as /xyz, /foo/bar as /xyz/bar (the spec's table).
  const pattern = `^(?:${prefixes.map(escapeRegExp).join('|')})(/.*)?$`;
  return [...words, '--rewrite', pattern, `${replacement.replace(/\$/g, '$$$$')}$1`];
}

function percentOf(mirror) {
  if (mirror.percent !== undefined) return Math.max(1, Math.min(100, mirror.percent));
  if (mirror.fraction !== undefined) {
    const { numerator, denominator = 100 } = mirror.fraction;
    return Math.max(1, Math.min(100, Math.round((100 * numerator) / denominator)));
  }
  return 100;
}

// A regular expression lila can run (JavaScript's, where the spec's are RE2's): one that does not
// compile makes the route unsupported, not the whole configuration refused.
function compiled(pattern, unsupported) {
  try {
    new RegExp(pattern);
  } catch (err) {
    unsupported(`the regular expression ${JSON.stringify(pattern)} is not one lila runs: ${err.message}`);
  }
  return pattern;
}

function whole(pattern) {
  return `^(?:${pattern})$`;
}

function escapeRegExp(text) {
  return String(text).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

module.exports = { rulesOf };
