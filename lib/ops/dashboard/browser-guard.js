'use strict';

/**
 * Refuses a change that a web page sent (a browser adds `Origin`) unless
 * the admin API has a token, which a page of another site cannot know, and
 * the page is the admin API's own: its Origin is the scheme and Host the
 * request came with. Requests without Origin (curl, programs) pass; the
 * token, if any, is checked apart. Both admin APIs (a process's, and the
 * primary's with `--workers`) apply it where the page's requests arrive.
 *
 * @param {import('node:http').IncomingMessage} request
 * @param {boolean} hasToken whether changes need a token
 * @returns {string | null} why it is refused, or null
 */
function refusePageChange(request, hasToken) {
  const { origin } = request.headers;
  if (origin === undefined) return null;
  if (!hasToken) {
    return 'changes are not accepted from web pages (the request has an Origin header) unless lila runs with --admin-token';
  }
  const own = `${request.socket.encrypted ? 'https' : 'http'}://${request.headers.host}`;
  if (origin.toLowerCase() !== own.toLowerCase()) {
    return `changes are accepted from this admin API's own page only: Origin "${origin}" is not "${own}"`;
  }
  return null;
}

module.exports = { refusePageChange };
