'use strict';

const { parseRateLimit } = require('../config/traffic-values');
const { limitIdentity } = require('../limits/named-limits');
const { routeText } = require('./settings');

/**
 * The first mistake among a config's rate limits that count together (one
 * identity, `limitIdentity`: one name, or one port and route) as nginx refuses
 * a zone bound twice to different keys: two that say different limits or
 * keys, since one count cannot hold both; or a route naming its own
 * listener's limit, which its every request takes already. Limits are read
 * as checked before (their lines built).
 *
 * @param {{text: string, port: number, line?: number, options: object,
 *   routes: {text: string, line?: number, actions?: object}[]}[]} listeners a model's
 * @returns {{line: number | undefined, message: string} | null} the line to name and what is wrong; null: none
 */
function limitClash(listeners) {
  const seen = new Map();
  for (const listener of listeners) {
    const own = placeOf(listener.options, listener.port, null, `listen ${listener.text}`, listener.line);
    const places = own === null ? [] : [own];
    for (const route of listener.routes) {
      const place = placeOf(route.actions || {}, listener.port, routeText(route), `route "${route.text}"`, route.line ?? listener.line);
      if (place === null) continue;
      if (own !== null && place.identity === own.identity) {
        return { line: place.line, message: `${place.what}: --rate-limit-name ${place.name} is its listener's own limit, which every request takes already` };
      }
      places.push(place);
    }
    for (const place of places) {
      const first = seen.get(place.identity);
      if (first === undefined) seen.set(place.identity, place);
      else if (first.limit !== place.limit) return { line: place.line, message: clashMessage(place, first, listener.port) };
    }
  }
  return null;
}

module.exports = { limitClash };

// A line's limit as its identity counts it: rate, burst and key in one string, whatever their spelling.
function placeOf(options, port, route, what, line) {
  if (options.rateLimit === undefined || options.rateLimit === null) return null;
  const { rate, per, burst } = parseRateLimit(options.rateLimit, '--rate-limit');
  const name = options.rateLimitName ?? null;
  const key = options.rateLimitKey ?? 'ip';
  return { identity: limitIdentity({ port, route, name }), limit: `${rate}/${per},${burst},${key}`, name, route, what, line,
    said: `--rate-limit ${options.rateLimit}${key === 'ip' ? '' : ` --rate-limit-key ${key}`}` };
}

function clashMessage(place, first, port) {
  const why = place.name !== null ? `both named ${place.name}` : place.route === null ? `both on port ${port}` : `the same route on port ${port}`;
  const apart = place.name !== null ? '' : ', or one of them a --rate-limit-name to count it apart';
  const at = first.line === undefined ? '' : ` (line ${first.line})`;
  return `${place.what} ${place.said} counts together with ${first.what}${at} ${first.said}, ${why}: ` +
    `give them the same --rate-limit and --rate-limit-key${apart}`;
}
