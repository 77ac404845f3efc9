'use strict';

/**
 * What every engine does before a request's pool: a route's actions may
 * answer it themselves (an `Answer`: a redirect, `--respond`, a CORS
 * preflight) or refuse it (a `LilaError`: access control), at once or once a
 * question they asked elsewhere is answered (`--forward-auth`). Then
 * `exchange.proceed(answer)` goes on: null sends the request to its pool, an
 * answer or a refusal is sent instead.
 *
 * @param {{route: {actions: object | null} | null, requestView: () => object, proceed: (answer: object | null) => void,
 *   gone: () => boolean}} exchange a fast or node exchange, or a tunnel
 * @param {object | null} refusal what the limits or the route table answer already (429, 413, 404)
 */
function beforePool(exchange, refusal) {
  const actions = refusal === null && exchange.route !== null ? exchange.route.actions : null;
  if (actions === null) {
    exchange.proceed(refusal);
    return;
  }
  const answer = actions.answer(exchange.requestView());
  if (answer === null || typeof answer.then !== 'function') {
    exchange.proceed(answer);
    return;
  }
  // The client may leave meanwhile: its exchange is over, and nothing goes on.
  answer.then(
    (result) => {
      if (!exchange.gone()) exchange.proceed(result);
    },
    (err) => {
      if (!exchange.gone()) exchange.proceed(err);
    }
  );
}

module.exports = { beforePool };
