'use strict';

const { deltaSeconds } = require('./cache-control');

// The device token lila answers to in Surrogate-Control's targeting, and announces in
// Surrogate-Capability (W3C Edge Architecture §2.1, §2.3). One name for every lila, so an
// origin's directives hold for a fleet whatever its members' host names.
const SURROGATE_ID = 'lila';
const CAPABILITY = `${SURROGATE_ID}="Surrogate/1.0"`;
const NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const MAX_AGE = /^(\d+)(?:\+(\d+))?$/;

/**
 * Parses Surrogate-Control (W3C Edge Architecture §2.2, as Fastly, Squid
 * and Akamai read it): comma-separated directives, each for every surrogate
 * or targeted at one with `;device-token`. lila reads those for every
 * surrogate and those targeted at `lila`: `max-age=N` (its freshness
 * lifetime) with an optional `+M` (how long past that it may be served when
 * the backend fails, as `stale-if-error=M`) and `no-store`. `no-store-remote`
 * is for surrogates far from the origin (lila is the origin's front door),
 * `content` asks for processing lila does not do (ESI), and other
 * extensions are ignored, as is a directive whose form is wrong (`max-age
 * =5`). A field with no directive lila applies is no field (null): the
 * answer's Cache-Control decides, as for RFC 9213's CDN-Cache-Control.
 *
 * @param {string | string[] | undefined} value the field's value, or its lines
 * @returns {import('./cache-control').Directives | null}
 */
function parseSurrogateControl(value) {
  if (value === undefined) return null;
  const text = Array.isArray(value) ? value.join(',') : value;
  const directives = Object.create(null);
  let found = false;
  for (const element of splitElements(text)) {
    const semicolon = element.lastIndexOf(';');
    if (semicolon !== -1 && element.slice(semicolon + 1).trim().toLowerCase() !== SURROGATE_ID) continue;
    const directive = semicolon === -1 ? element.trim() : element.slice(0, semicolon).trim();
    const equals = directive.indexOf('=');
    const name = (equals === -1 ? directive : directive.slice(0, equals)).toLowerCase();
    if (!NAME.test(name) || name in directives) continue;
    if (name === 'no-store' && equals === -1) {
      directives['no-store'] = true;
      found = true;
    } else if (name === 'max-age' && equals !== -1) {
      const match = MAX_AGE.exec(directive.slice(equals + 1));
      if (match === null) continue;
      directives['max-age'] = deltaSeconds(match[1]);
      if (match[2] !== undefined) directives['stale-if-error'] = deltaSeconds(match[2]);
      found = true;
    }
  }
  return found ? directives : null;
}

/**
 * The Surrogate-Capability a request to the backend carries: lila's own
 * after any a surrogate in front of it announced (§2.1).
 *
 * @param {string | undefined} existing the request's
 * @returns {string}
 */
function surrogateCapability(existing) {
  return existing === undefined || existing.trim() === '' ? CAPABILITY : `${existing}, ${CAPABILITY}`;
}

// The list's elements, split at the commas outside quoted strings.
function splitElements(text) {
  const elements = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (c === ',' && !quoted) {
      elements.push(text.slice(start, i));
      start = i + 1;
    }
  }
  elements.push(text.slice(start));
  return elements.filter((element) => element.trim() !== '');
}

module.exports = { parseSurrogateControl, surrogateCapability, SURROGATE_ID };
