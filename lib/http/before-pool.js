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
 *   gone: () => boolean, unrouted: () => object}} exchange a fast or node exchange, or a tunnel
 * @param {object | null | Promise<object | null>} refusal what the limits answer already (429, 413), or will;
 *   then a request no route matched gets `exchange.unrouted()`, its 404
 */
function beforePool(exchange, refusal) {
  // A rate limit counted with a store decides once it answers (or by its deadline).
  if (refusal !== null && typeof refusal.then === 'function') {
    refusal.then((result) => {
      if (!exchange.gone()) beforePool(exchange, result);
    });
    return;
  }
  if (refusal === null && exchange.route === null) refusal = exchange.unrouted();
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
