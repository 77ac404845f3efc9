'use strict';

const crypto = require('node:crypto');
const { parseHttpDate } = require('./http-date');
const { entityTags, strongMatch } = require('./validators');

// Past this many ranges in one Range field, it is ignored (a 200 of the whole): Apache's
// MaxRanges is 200, and no client asks for more than a few (CVE-2011-3192's "Apache Killer" asked for 1300).
const MAX_RANGES = 100;
const RANGE_SPEC = /^(\d*)-(\d*)$/;

/**
 * The byte ranges a Range field asks of a representation of `size` bytes
 * (RFC 9110 §14.1.2, §14.2): `first-last`, `first-` and `-suffix`, several
 * comma-separated (optional whitespace, empty elements skipped), the unit
 * case-insensitive. A field lila ignores (the whole answered, 200): no
 * field, a unit other than bytes, a syntax error (a `last` below its
 * `first` included), more than 100 ranges, or any suffix range of an empty
 * file (no Content-Range can say it). Ranges that overlap or touch are
 * coalesced into one (RFC 9110 §14.2 allows it; Apache does it): the
 * answer never holds a byte twice, nor more bytes than the file. When none
 * was coalesced, the ranges keep the order asked (as §14.6 says parts
 * should); else they come in ascending order.
 *
 * @param {string | string[] | undefined} value the Range field
 * @param {number} size the representation's length
 * @returns {null | 'unsatisfiable' | {start: number, end: number}[]} null: answer 200 with the whole;
 *   'unsatisfiable': 416 with `Content-Range: bytes *\/SIZE`; ranges: inclusive, at least one
 */
function parseRange(value, size) {
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (typeof text !== 'string') return null;
  const equals = text.indexOf('=');
  if (equals !== 5 || text.slice(0, 5).toLowerCase() !== 'bytes') return null;
  const ranges = [];
  let specs = 0;
  let emptySuffix = false;
  for (const element of text.slice(6).split(',')) {
    const spec = trimOws(element);
    if (spec === '') continue;
    const match = RANGE_SPEC.exec(spec);
    if (match === null || (match[1] === '' && match[2] === '')) return null;
    if (++specs > MAX_RANGES) return null;
    if (match[1] === '') {
      const suffix = Number(match[2]);
      if (suffix > 0 && size === 0) emptySuffix = true;
      else if (suffix > 0) ranges.push({ start: Math.max(0, size - suffix), end: size - 1 });
      continue;
    }
    const first = Number(match[1]);
    const last = match[2] === '' ? Infinity : Number(match[2]);
    if (last < first) return null;
    if (first < size) ranges.push({ start: first, end: Math.min(last, size - 1) });
  }
  if (specs === 0 || emptySuffix) return null;
  if (ranges.length === 0) return 'unsatisfiable';
  return coalesced(ranges);
}

/**
 * Whether If-Range lets a Range through (RFC 9110 §13.1.5): no If-Range,
 * an entity tag that matches ours strongly, or an HTTP-date equal to our
 * Last-Modified when that is a strong validator (a second or more before
 * now, §8.8.2.2). Else the whole is answered (200).
 *
 * @param {string | string[] | undefined} value the If-Range field
 * @param {{etag: string, lastModified: string}} validators
 * @param {number} [now] ms since the epoch
 * @returns {boolean}
 */
function ifRangeAllows(value, validators, now = Date.now()) {
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (text === undefined) return true;
  const trimmed = trimOws(text);
  if (trimmed.startsWith('"') || trimmed.startsWith('W/')) {
    const tags = entityTags(trimmed);
    return tags !== null && tags.length === 1 && strongMatch(tags[0], validators.etag);
  }
  const date = parseHttpDate(trimmed);
  const modified = parseHttpDate(validators.lastModified);
  return !Number.isNaN(date) && date === modified && modified <= now - 1000;
}

/**
 * A `multipart/byteranges` body (RFC 9110 §14.6) around file slices: each
 * part's head (its delimiter, Content-Type, Content-Range and blank line),
 * the range to read after it, the close delimiter, and the exact length of
 * the whole, for Content-Length. The caller writes `head`, the bytes
 * `start` to `end` (inclusive) of each part, then `tail`.
 *
 * @param {{start: number, end: number}[]} ranges as parseRange gives them
 * @param {number} size the file's length
 * @param {string | null} contentType the file's; null: parts say none
 * @param {string} [boundary] random when not given (24 hex digits: no body will hold its delimiter by chance)
 * @returns {{contentType: string, contentLength: number, parts: {head: Buffer, start: number, end: number}[], tail: Buffer}}
 */
function multipartByteranges(ranges, size, contentType, boundary = crypto.randomBytes(12).toString('hex')) {
  const type = contentType ? `Content-Type: ${contentType}\r\n` : '';
  let contentLength = 0;
  const parts = ranges.map(({ start, end }, i) => {
    // The CRLF before a delimiter belongs to it (RFC 2046 §5.1.1); the first has nothing before it.
    const head = Buffer.from(`${i === 0 ? '' : '\r\n'}--${boundary}\r\n${type}Content-Range: ${contentRange(start, end, size)}\r\n\r\n`, 'latin1');
    contentLength += head.length + end - start + 1;
    return { head, start, end };
  });
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1');
  contentLength += tail.length;
  return { contentType: `multipart/byteranges; boundary=${boundary}`, contentLength, parts, tail };
}

/**
 * A Content-Range value: `bytes START-END/SIZE`.
 *
 * @param {number} start
 * @param {number} end inclusive
 * @param {number} size
 * @returns {string}
 */
function contentRange(start, end, size) {
  return `bytes ${start}-${end}/${size}`;
}

/**
 * The Content-Range of a 416: `bytes *\/SIZE`.
 *
 * @param {number} size
 * @returns {string}
 */
function unsatisfiedRange(size) {
  return `bytes */${size}`;
}

module.exports = { parseRange, ifRangeAllows, multipartByteranges, contentRange, unsatisfiedRange, MAX_RANGES };

function coalesced(ranges) {
  if (ranges.length === 1) return ranges;
  const sorted = ranges.slice().sort((a, b) => a.start - b.start);
  const merged = [{ ...sorted[0] }];
  for (let i = 1; i < sorted.length; i++) {
    const last = merged[merged.length - 1];
    if (sorted[i].start <= last.end + 1) last.end = Math.max(last.end, sorted[i].end);
    else merged.push({ ...sorted[i] });
  }
  return merged.length === ranges.length ? ranges : merged;
}

// OWS is spaces and tabs (RFC 9110 §5.6.3), not whatever String#trim takes for white space.
function trimOws(text) {
  let start = 0;
  let end = text.length;
  while (start < end && (text[start] === ' ' || text[start] === '\t')) start++;
  while (end > start && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
  return text.slice(start, end);
}
