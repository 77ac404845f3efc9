'use strict';

const { LilaError, codes } = require('../errors');

// Where OTLP/HTTP takes traces, below a collector's base URL (OTLP's specification).
const TRACES_PATH = '/v1/traces';

/**
 * Reads a collector's OTLP/HTTP base URL (`--otlp-endpoint`) and returns
 * where its traces go: the URL with `/v1/traces` appended to its path.
 *
 * @param {unknown} text `http://127.0.0.1:4318`, `https://otel.example.com/base`
 * @param {string} [name] the option as the user knows it, for the message
 * @returns {URL}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`: not http or https; credentials, a query or a fragment
 */
function tracesUrl(text, name = '--otlp-endpoint') {
  let url = null;
  try {
    url = typeof text === 'string' ? new URL(text) : null;
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new LilaError(codes.INVALID_OPTION, `"${name}" must be an http:// or https:// URL, as in http://127.0.0.1:4318, received "${text}"`);
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    // The credentials are not repeated: the message goes to a terminal and logs.
    const shown = url.username === '' && url.password === '' ? text : '(a URL with credentials)';
    throw new LilaError(codes.INVALID_OPTION, `"${name}" takes no credentials, query or fragment (a collector's credentials go in ` +
      `--otlp-header Authorization=...), received "${shown}"`);
  }
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${TRACES_PATH}`;
  return url;
}

module.exports = { tracesUrl };
