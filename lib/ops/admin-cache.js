'use strict';

const { ok, fail, readJson } = require('./admin-replies');

// What a purge names: a URL (and a host), a path prefix (and a host), or a tag.
const SELECTOR_FIELDS = new Set(['url', 'host', 'prefix', 'tag']);

/**
 * `POST /cache/purge`: removes stored answers (`--cache`): `{"url": "/path?q", "host": "..."}`,
 * `{"prefix": "/img/", "host": "..."}` (host optional) or `{"tag": "product-42"}` (tags from
 * the backends' `Cache-Tag` or `Surrogate-Key`). Answers `{"purged": N}`. In a fleet, every
 * member purges too (the answer says so); with workers, every worker does.
 *
 * @param {{view: () => {cache: import('../cache/cache') | null}, fleet: object | null}} admin
 * @param {{request: import('node:http').IncomingMessage}} params
 * @returns {Promise<object>} the reply
 */
async function purgeCache(admin, { request }) {
  const cache = admin.view().cache;
  if (cache === null || cache === undefined) return fail(409, 'this lila has no cache: give a route --cache');
  const body = await readJson(request);
  if (body.reply !== undefined) return body.reply;
  const selector = body.value;
  const problem = selectorProblem(selector);
  if (problem !== null) return fail(400, problem);
  let purged;
  try {
    purged = await cache.purge(selector);
  } catch (err) {
    if (err instanceof TypeError) return fail(400, err.message);
    throw err;
  }
  admin.logger.info(`cache: purged ${purged} stored answer${purged === 1 ? '' : 's'} (${JSON.stringify(selector)}) through the admin API`);
  if (admin.fleet === null || admin.fleet.sharePurge === undefined) return ok(200, { purged });
  const shared = await admin.fleet.sharePurge(selector);
  return ok(200, { purged, fleet: shared.shared ? 'shared' : `this member only: ${shared.why}` });
}

/**
 * What is wrong with a purge's body, or null.
 *
 * @param {unknown} selector
 * @returns {string | null}
 */
function selectorProblem(selector) {
  if (selector === null || typeof selector !== 'object' || Array.isArray(selector)) {
    return 'the body must be a JSON object: {"url": "/path"}, {"prefix": "/img/"} or {"tag": "product-42"}, with "host" for url or prefix';
  }
  const unknown = Object.keys(selector).find((field) => !SELECTOR_FIELDS.has(field));
  if (unknown !== undefined) return `unknown field "${unknown}" (known: url, host, prefix, tag)`;
  const kinds = ['url', 'prefix', 'tag'].filter((field) => selector[field] !== undefined);
  if (kinds.length !== 1) return 'name one of "url", "prefix" or "tag"';
  for (const field of [...kinds, 'host']) {
    if (selector[field] !== undefined && (typeof selector[field] !== 'string' || selector[field] === '')) return `"${field}" must be a non-empty string`;
  }
  if (selector.tag !== undefined && selector.host !== undefined) return '"host" goes with "url" or "prefix", not "tag"';
  return null;
}

module.exports = { purgeCache, selectorProblem };
