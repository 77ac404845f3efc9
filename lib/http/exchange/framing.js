'use strict';

/**
 * How a response body is delimited, as a relay reads it: not at all (a HEAD,
 * 204, 304), by its Content-Length, chunked, by the backend closing the
 * connection, or by an h2 backend's stream ending.
 */
module.exports = Object.freeze({ NONE: 0, LENGTH: 1, CHUNKED: 2, CLOSE: 3, STREAM: 4 });
