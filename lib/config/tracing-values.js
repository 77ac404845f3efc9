'use strict';

const { tracesUrl } = require('../tracing/otlp-url');
const { LilaError, codes } = require('../errors');

/** `--otlp-protocol`'s choices: OTLP/HTTP with protobuf's binary encoding, or OTLP/JSON. */
const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'];
// RFC 9110 field names are tokens.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// A field value: visible ASCII, spaces and tabs inside, and bytes past ASCII (RFC 9110 obs-text).
const FIELD_VALUE = /^[\x21-\x7e\x80-\uffff]([\x20-\x7e\t\x80-\uffff]*[\x21-\x7e\x80-\uffff])?$/;
// What the exporter sets itself, and what would change how the body is framed.
const RESERVED_HEADERS = new Set(['content-type', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'te', 'upgrade', 'host']);
const SERVICE_NAME = /^[\x21-\x7e][\x20-\x7e]{0,254}$/;
const RATIO = /^(?:0|1|0?\.[0-9]+|[01]\.[0-9]*)$/;

/**
 * Reads `--otlp-endpoint`: the collector's OTLP/HTTP base URL, to which
 * `/v1/traces` is appended.
 *
 * @param {unknown} value
 * @param {string} name the option as the user knows it
 * @returns {string} the URL as given
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseOtlpEndpoint(value, name) {
  tracesUrl(value, name);
  return value;
}

/**
 * Reads `--otlp-header NAME=VALUE`, given once or more.
 *
 * @param {string[]} values
 * @param {string} name the option as the user knows it
 * @returns {Record<string, string>} by lower-case field name
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`: not NAME=VALUE, a field lila sets itself, a name given twice
 */
function parseOtlpHeaders(values, name) {
  const headers = {};
  for (const text of values) {
    const equals = text.indexOf('=');
    const field = text.slice(0, equals).trim();
    const fieldValue = text.slice(equals + 1).trim();
    if (equals === -1 || !TOKEN.test(field) || !FIELD_VALUE.test(fieldValue)) {
      throw new LilaError(codes.INVALID_OPTION, `"${name}" must be NAME=VALUE (a field name, and a value without control characters), ` +
        `as in Authorization=Bearer 123, received "${text}"`);
    }
    const lower = field.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) throw new LilaError(codes.INVALID_OPTION, `"${name}" cannot set ${field}: lila sets it, received "${text}"`);
    if (Object.hasOwn(headers, lower)) throw new LilaError(codes.INVALID_OPTION, `"${name}" gives ${field} twice`);
    headers[lower] = fieldValue;
  }
  return headers;
}

/**
 * Reads `--service-name`: the `service.name` of lila's spans.
 *
 * @param {unknown} value
 * @param {string} name the option as the user knows it
 * @returns {string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseServiceName(value, name) {
  if (typeof value === 'string' && SERVICE_NAME.test(value)) return value;
  throw new LilaError(codes.INVALID_OPTION, `"${name}" must be 1 to 255 printable ASCII characters, starting with a visible one, received "${value}"`);
}

/**
 * Reads `--trace-sample`: the share of the traces lila starts that it records, from 0 to 1.
 *
 * @param {unknown} value
 * @param {string} name the option as the user knows it
 * @returns {number}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function parseTraceSample(value, name) {
  const ratio = typeof value === 'string' && RATIO.test(value) ? Number(value) : NaN;
  if (ratio >= 0 && ratio <= 1) return ratio;
  throw new LilaError(codes.INVALID_OPTION, `"${name}" must be a number from 0 to 1, as in 0.01, received "${value}"`);
}

/**
 * `--otlp-endpoint` and the traces' other global options (a command line's,
 * or a config file's global lines): what the service's `Tracer` is made
 * with; undefined when traces are off.
 *
 * @param {object} options read by the option table
 * @returns {{endpoint: string, protocol: string | undefined, headers: Record<string, string> | undefined,
 *   serviceName: string | undefined, ratio: number | undefined} | undefined}
 * @throws {LilaError} one of the others without --otlp-endpoint
 */
function tracingOf(options) {
  const endpoint = options['otlp-endpoint'];
  if (endpoint === undefined) {
    const stray = ['otlp-protocol', 'otlp-header', 'service-name', 'trace-sample'].find((name) => options[name] !== undefined);
    if (stray !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${stray}" goes with --otlp-endpoint URL: without it, lila records no traces`);
    return undefined;
  }
  return {
    endpoint,
    protocol: options['otlp-protocol'],
    headers: options['otlp-header'],
    serviceName: options['service-name'],
    ratio: options['trace-sample']
  };
}

module.exports = { OTLP_PROTOCOLS, parseOtlpEndpoint, parseOtlpHeaders, parseServiceName, parseTraceSample, tracingOf };
