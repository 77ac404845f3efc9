'use strict';

const LocalResponse = require('../http/lifecycle/local-response');
const { preconditions } = require('../files/validators');
const { forClients } = require('./stored-fields');
const { parseRange, ifRangeAllows, multipartByteranges, contentRange, unsatisfiedRange } = require('../files/ranges');

// What a 304 from the store carries of the stored answer's fields (RFC 9110 §15.4.5).
const NOT_MODIFIED_FIELDS = new Set(['cache-control', 'content-location', 'date', 'etag', 'expires', 'vary', 'last-modified']);
// A stored answer's framing is its own: the body it is sent with says its length.
const FRAMING = new Set(['content-length', 'transfer-encoding']);

/**
 * A client's answer from a stored one (a hit, or a stale answer served):
 * its status and fields with `Age` and `Cache-Status`, its body; or, as the
 * request asks, a 304 or 412 by its preconditions, 206 with one or several
 * ranges of it, 416 for ranges it does not have (RFC 9111 §4.3.2 and RFC
 * 9110's conditional and range requests, answered without the backend).
 * HEAD gets the head alone.
 *
 * @param {{status: number, headers: string[], body: Buffer}} entry
 * @param {{method: string, headers: object}} request
 * @param {number} age seconds
 * @param {string} status the Cache-Status field's value
 * @returns {LocalResponse}
 */
function storedAnswer(entry, request, age, status) {
  const view = clientView(entry);
  const fields = view.fields.slice();
  const etag = view.etag;
  const lastModified = view.lastModified;
  fields.push('Age', String(Math.max(0, Math.floor(age))), 'Cache-Status', status);
  const head = request.method === 'HEAD';
  if (entry.status === 200 && (etag !== undefined || lastModified !== undefined)) {
    const precondition = preconditions(request, view, request.method);
    if (precondition === 304) return new LocalResponse(304, notModifiedFields(fields), null, 0);
    if (precondition === 412) return withLength(412, fields.filter(notContentField()), Buffer.alloc(0), head);
  }
  const body = entry.body;
  const range = request.headers.range;
  if (entry.status === 200 && range !== undefined && request.method === 'GET' &&
      (request.headers['if-range'] === undefined || ifRangeAllows(request.headers['if-range'], view))) {
    const ranges = parseRange(range, body.length);
    if (ranges === 'unsatisfiable') return withLength(416, ['Content-Range', unsatisfiedRange(body.length), ...fields], Buffer.alloc(0), head);
    if (ranges !== null && ranges.length === 1) {
      const { start, end } = ranges[0];
      return withLength(206, [...fields, 'Content-Range', contentRange(start, end, body.length)], body.subarray(start, end + 1), head);
    }
    if (ranges !== null) return multipart(fields, body, ranges);
  }
  return withLength(entry.status, fields, body, head);
}

module.exports = { storedAnswer };

// What every client of an entry is sent of its fields, and its validators: worked out at its first
// hit and kept on it, out of sight of the spreads that make a changed entry (`{ ...entry }`), so a
// new entry never carries an old one's view. Entries are never changed in place (memory-store.js).
const kView = Symbol('clientView');

function clientView(entry) {
  const kept = entry[kView];
  if (kept !== undefined) return kept;
  const fields = [];
  let etag;
  let lastModified;
  for (let i = 0; i < entry.headers.length; i += 2) {
    const name = entry.headers[i].toLowerCase();
    if (FRAMING.has(name) || name === 'age' || name === 'cache-status' || !forClients(name)) continue;
    if (name === 'etag') etag = entry.headers[i + 1];
    else if (name === 'last-modified') lastModified = entry.headers[i + 1];
    fields.push(entry.headers[i], entry.headers[i + 1]);
  }
  const view = { fields, etag, lastModified };
  Object.defineProperty(entry, kView, { value: view, enumerable: false });
  return view;
}

function withLength(status, fields, body, head) {
  const bodiless = status === 204 || status === 304 || status < 200;
  if (!bodiless) fields.push('Content-Length', String(body.length));
  return new LocalResponse(status, fields, head || bodiless ? null : body, bodiless ? 0 : body.length);
}

// The parts of several ranges, each with its Content-Type and Content-Range, in one body.
function multipart(fields, body, ranges) {
  let type = null;
  for (let i = 0; i < fields.length; i += 2) if (fields[i].toLowerCase() === 'content-type') type = fields[i + 1];
  const parts = multipartByteranges(ranges, body.length, type);
  const pieces = [];
  for (const part of parts.parts) pieces.push(part.head, body.subarray(part.start, part.end + 1));
  pieces.push(parts.tail);
  const kept = fields.filter(notNamed('content-type'));
  kept.push('Content-Type', parts.contentType);
  return withLength(206, kept, Buffer.concat(pieces), false);
}

function notModifiedFields(fields) {
  const kept = [];
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i].toLowerCase();
    if (NOT_MODIFIED_FIELDS.has(name) || name === 'age' || name === 'cache-status') kept.push(fields[i], fields[i + 1]);
  }
  return kept;
}

// A filter of [name, value, ...] pairs that drops the fields of one name.
function notNamed(name) {
  return (value, index, all) => (index % 2 === 0 ? value.toLowerCase() !== name : all[index - 1].toLowerCase() !== name);
}

function notContentField() {
  return (value, index, all) => !(index % 2 === 0 ? value : all[index - 1]).toLowerCase().startsWith('content-');
}
