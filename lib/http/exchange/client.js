'use strict';

/**
 * The fast engine (engines/fast.js) as its client connections, HTTP/1.1
 * ones (../fast/) and h2 sessions (../h2/), read it: what every http engine
 * gives its requests (../route-request.js's `Engine`), and what serves the
 * connections themselves.
 *
 * @typedef {import('../route-request').Engine & {
 *   now: () => number,
 *   bodyWatch: import('../body-watch').BodyWatch,
 *   connections: Set<object>,
 *   idleTimeout: number,
 *   keepAliveFields: string,
 *   h2: {serve: (socket: import('node:net').Socket, read: Buffer, clientAddress: string) => void} | null
 * }} FastEngine `now()`: the clock of deadlines; `bodyWatch`: --body-timeout; `connections`: the
 *   client connections open, HTTP/1.1 ones and h2 sessions, which the engine's sweep checks;
 *   `idleTimeout`: how long one stays open idle (the keep-alive timeout, or a drain's grace);
 *   `keepAliveFields`: what ends the head of a response that keeps its connection; `h2`: what
 *   an h2 client's connection is handed to (null: --no-http2)
 */

/**
 * What an exchange reads of the client it answers (exchange.js calls it its
 * connection): an HTTP/1.1 connection (../fast/connection.js's
 * `ClientConnection`), or an h2 stream's client (../h2/stream-exchange.js's
 * `StreamClient`). Both fit it.
 *
 * @typedef {object} Client
 * @property {FastEngine} engine its listener's
 * @property {string | undefined} clientAddress after --accept-proxy
 * @property {'http' | 'https'} scheme
 * @property {import('node:net').Socket} socket the client's connection
 * @property {() => void} pause stops reading the request's body (its backend takes no more)
 * @property {() => void} resume reads it on
 * @property {() => boolean} clientReadPaused whether lila, not the client, stopped the reading
 * @property {(exchange: object) => void} abandonBody a body refused before it is read (413) or
 *   stalled (408): what comes of it is not read
 * @property {(head: object) => boolean} mayKeepAlive whether the response may leave the connection open
 * @property {(keepAlive: boolean) => string} [connectionHeader] HTTP/1.1: the Connection fields of
 *   a response head, and the empty line (an h2 stream's exchange writes its own head)
 * @property {() => void} stopReading no request after this one is read: the connection ends with
 *   the answers it owes
 * @property {(exchange: object) => void} responseFinished the exchange's response is all written
 */

module.exports = {};
