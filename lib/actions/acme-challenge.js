'use strict';

const Answer = require('./answer');
const { LilaError, codes } = require('../errors');

/**
 * What a plain http listener does with `/.well-known/acme-challenge/TOKEN`
 * while lila obtains certificates: it answers with the token's key
 * authorization itself, before any route, redirect or pool (as Caddy and
 * Traefik do), so that a `--redirect-https` or a route's `--allow` never
 * stands in a CA's way. The actions of the route the listener puts first
 * (`routing/listener-routes.js`), with the shape of every route's.
 */
class ChallengeActions {
  /**
   * @param {{path: string, httpAnswer: (url: string) => string | null}} challenges the tokens waiting (acme/challenges.js)
   */
  constructor(challenges) {
    this.challenges = challenges;
    this.text = 'acme-challenge';
    this.answersAll = true;
  }

  /**
   * @param {{url: string}} view
   * @returns {Answer | LilaError | Promise<Answer | LilaError>} the key authorization (200), or 404 for a token lila does
   *   not know; a promise while the state directory is asked
   */
  answer(view) {
    const answer = this.challenges.httpAnswer(view.url);
    if (answer !== null && typeof answer.then === 'function') return answer.then((text) => reply(view, text));
    return reply(view, answer);
  }

  target(url) {
    return url;
  }

  requestHeaders(headers) {
    return headers;
  }

  responseHeaders(headers) {
    return headers;
  }

  errorPage() {
    return null;
  }
}

module.exports = ChallengeActions;

function reply(view, answer) {
  if (answer === null) return new LilaError(codes.NO_ROUTE, `no ACME challenge waits for "${view.url.slice(0, 200)}"`, 404);
  return new Answer(200, [], Buffer.from(answer), 'application/octet-stream');
}
