'use strict';

/**
 * The features that observe a request on its way (a `Passage`): what a
 * route has of each is found once, when the route is made, and each
 * request its route sends to a pool gets their observers, in this order.
 *
 * Order: a feature higher in FEATURES is further out, as layers of an
 * onion: on the way in (`forwarded`, the request's body) it sees the
 * request first; on the way out (the response head and body) it sees the
 * response last, after what every feature below it did. So `--compress`,
 * first, compresses what the others made of the answer (a file too), `--hook`
 * changes the request before the others see it and the answer after they
 * made it, `--mirror` copies the request as the hook left it, `--root`
 * answers from files what it can, and the cache, innermost, stores the
 * backend's identity answer. What comes next goes here: traces (time every
 * step: first of all).
 *
 * A feature may answer a request itself, before any backend: its
 * `answer(passage)` (a file under `--root`; next a stored answer, a hook's)
 * gives a `LocalResponse` (local-response.js), a `LilaError` refusing the
 * request, or null to let the next feature (then the pool) have it, maybe
 * as a promise; features are asked in FEATURES' order, as the request goes
 * to its pool, and the first answer wins.
 *
 * The points, each optional on an observer:
 * - `forwarded`: the feature's `open(passage)` (if it has one), once, as the request goes
 *   to its pool (after the limits and the route's actions let it through,
 *   and the features' answers were asked; `passage.local` is the local answer
 *   it gets, if any), before a backend is picked: its observer for this
 *   request, or null when it has nothing to do with it. Not for requests
 *   lila answers before the pool, nor for upgrades.
 * - `requestBody(chunk)`: each piece of the request body as the engine has
 *   it (an HTTP/1.1 client's chunked framing included on the fast engine:
 *   `passage.outgoingHead().framed` says so), pieces that came before the
 *   request was forwarded first. Never waited for: an observer keeps what it
 *   needs.
 * - `requestEnded()`: the body is whole; for a request without a body, as it
 *   is forwarded.
 * - `responseHead(passage, status, headers, bodiless)`: the backend's
 *   response head, its fields as the client would get them (`[name, value,
 *   ...]`, after the route's header edits); returns the fields the client
 *   gets. It may put a `BodyFilter` on the body (`passage.filterBody`).
 * - `finished(passage)`: the request is over (answered, cut short, or its
 *   client left); `passage.answered` is the status the client got.
 */
const FEATURES = [
  // --compress: the response body compressed as the client accepts (http/compression/).
  (route) => route.compression,
  // --hook: a user's code on the request (it may answer it) and on the answer's head and body (hooks/).
  (route) => route.hooks,
  // --mirror: a copy of the request to other pools, its answer thrown away (http/mirror/).
  (route) => route.mirror,
  // --root: files answered before the pool (files/static-files.js).
  (route) => route.files,
  // --cache: answers stored and answered from the store, fetched once per key (cache/).
  (route) => route.cache
];

/**
 * @typedef {object} BodyFilter what a response body goes through in place of
 *   going to the client (`--compress`'s encoder): `write(data)` (false: stop
 *   reading the backend until its owner's `filterDrained()`), `end()`,
 *   `pause()` and `resume()` (the client takes no more, or more again),
 *   `full`, `destroy()`; it gives its owner, the engine's passage,
 *   `filterData(data)`, `filterDrained()`, `filterEnded()` and
 *   `filterFailed(err)`.
 */

/**
 * @typedef {object} OutgoingHead a request as its backend gets it, made by its
 *   engine (`passage.outgoingHead()`), asked only by an observer that needs it
 * @property {string} method
 * @property {string} target what its backend gets (its route's path edits)
 * @property {string[]} headers `[name, value, ...]` as its backend gets them (X-Forwarded-*, request
 *   ids, its route's header edits), the client's Host kept
 * @property {string | undefined} host the client's Host (or :authority); undefined: none
 * @property {number} length its body's length; -1: unknown until it ends (chunked)
 * @property {boolean} framed its body's pieces come with HTTP/1.1's chunked framing (the fast engine's HTTP/1.1 clients)
 * @property {import('node:net').Socket} client the client's connection (for a PROXY protocol header)
 */

/**
 * The features of a route, in FEATURES' order; null when it has none (its requests cost nothing more).
 *
 * @param {object} route a `Route`, with its actions and mirror made
 * @returns {object[] | null} each with `open(passage)`
 */
function featuresOf(route) {
  let list = null;
  for (const find of FEATURES) {
    const feature = find(route);
    if (feature !== null && feature !== undefined) (list ??= []).push(feature);
  }
  return list;
}

/**
 * The first answer a feature of the route makes for a request (see above),
 * from feature `from` on.
 *
 * @param {object[]} features its route's
 * @param {import('./passage')} passage
 * @param {number} [from]
 * @returns {object | null | Promise<object | null>} a `LocalResponse`, a `LilaError`, or null: none
 */
function answerOf(features, passage, from = 0) {
  for (let i = from; i < features.length; i++) {
    if (features[i].answer === undefined) continue;
    const answer = features[i].answer(passage);
    if (answer === null) continue;
    if (typeof answer.then !== 'function') return answer;
    return answer.then((result) => (result === null && !passage.gone() ? answerOf(features, passage, i + 1) : result));
  }
  return null;
}

/**
 * A request's observers, as it goes to its pool.
 *
 * @param {object[]} features its route's
 * @param {import('./passage')} passage
 * @returns {object[] | null} null: none of them observes this request
 */
function openObservers(features, passage) {
  let observers = null;
  for (let i = 0; i < features.length; i++) {
    const observer = features[i].open === undefined ? null : features[i].open(passage);
    if (observer !== null) (observers ??= []).push(observer);
  }
  return observers;
}

module.exports = { featuresOf, answerOf, openObservers, FEATURES };
