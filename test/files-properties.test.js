'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const nodePath = require('node:path');
const fc = require('fast-check');
const { requestSegments } = require('../lib/files/path-segments');
const { resolveFile, resolveFileSync, within } = require('../lib/files/resolve');
const { parseRange, multipartByteranges, MAX_RANGES } = require('../lib/files/ranges');
const { parseHttpDate, formatHttpDate } = require('../lib/files/http-date');
const { entityTags } = require('../lib/files/validators');
const { listingHtml } = require('../lib/files/listing');
const { chooseSibling } = require('../lib/files/precompressed');
const { check, runs, seed, withinTime } = require('./property-run');

const RUNS = { paths: 2000, files: 300, ranges: 1000, dates: 500, tags: 500, listing: 200, accept: 1000 };
const ROOT = '/srv/www';
// Pieces a traversal is made of, so that random paths meet them often; and plain ones.
const PIECES = ['/', '/', '.', '..', '%2e', '%2E', '%2f', '%2F', '%5c', '\\', '%00', '%25', '%252e', '%c0%ae', '%c0%af',
  '%e0%80%ae', '%ed%a0%80', '%ff', '%', '%g', '%2', '.well-known', '.env', '.git', 'a', 'b.txt', 'sub', 'etc', 'passwd',
  'up', 'link', '\u00e9', '\u00c3\u00a9', '%c3%a9', '%e2%80%a5', '%ef%bc%8e', ':', 'con', ' ', '\u0100', '%0a', '?'];
const path = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.constantFrom(...PIECES), { maxLength: 12 }).map((parts) => `/${parts.join('')}`) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }).map((text) => `/${text}`) }
);
// A segment of hex escapes and bytes near UTF-8's edges, to set against decodeURIComponent.
const escapes = fc.array(fc.constantFrom('%', 'a', 'F', '0', '8', '%c0', '%c2', '%80', '%bf', '%e0', '%a0', '%ed', '%9f',
  '%f0', '%90', '%f4', '%8f', '%f5', '%ff', '%41', '%zz', '%4', '%c3%a9', '%e2%82%ac', '%f0%9f%98%80'), { minLength: 1, maxLength: 8 })
  .map((parts) => parts.join(''));
const DECODE_REFUSALS = ['bytes that are no UTF-8', 'a "%" not followed by two hex digits'];
// File names as a directory may hold them: any Unicode, no separator, no control, not hidden.
const name = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 })
  .filter((text) => !/[/\\\x00-\x1f\x7f]/.test(text) && !text.startsWith('.') && !text.includes('\ufffd'));

describe(`files: parsers, as properties (seed ${seed()})`, () => {
  it(`decode any path into names that stay under the root, or refuse it (${runs(RUNS.paths)} runs)`, () => {
    check(fc.property(path, fc.boolean(), (p, windows) => {
      const asked = withinTime(() => requestSegments(p, { windows }));
      if (asked.status !== undefined) {
        assert.ok(asked.status === 400 || asked.status === 404);
        return;
      }
      asked.segments.forEach((segment, i) => {
        assert.ok(segment !== '' && segment !== '.' && segment !== '..', segment);
        assert.doesNotMatch(segment, /[/\\\x00-\x1f\x7f]/);
        assert.ok(!segment.startsWith('.') || (i === 0 && segment === '.well-known'), segment);
        if (windows) assert.doesNotMatch(segment, /:|[. ]$/);
      });
      const joined = nodePath.posix.join(ROOT, ...asked.segments);
      assert.ok(joined === ROOT || joined.startsWith(`${ROOT}/`), joined);
    }), RUNS.paths);
  });

  it(`decode a segment as decodeURIComponent does, refusing exactly what it throws on (${runs(RUNS.paths)} runs)`, () => {
    check(fc.property(escapes, (segment) => {
      let expected;
      try {
        expected = decodeURIComponent(segment);
      } catch {
        expected = null;
      }
      const asked = requestSegments(`/${segment}`, { windows: false });
      if (expected === null) assert.ok(DECODE_REFUSALS.includes(asked.why), `${segment}: ${asked.why}`);
      else if (asked.segments !== undefined) assert.deepEqual(asked.segments, [expected]);
      else assert.ok(!DECODE_REFUSALS.includes(asked.why), `${segment}: ${asked.why}`);
    }), RUNS.paths);
  });

  it(`give back the names a path was made of, percent-encoded or as raw UTF-8 bytes (${runs(RUNS.paths)} runs)`, () => {
    check(fc.property(fc.array(name, { minLength: 1, maxLength: 5 }), fc.boolean(), (names, slash) => {
      const encoded = `/${names.map(encodeURIComponent).join('/')}${slash ? '/' : ''}`;
      const raw = Buffer.from(`/${names.join('/')}${slash ? '/' : ''}`, 'utf8').toString('latin1');

      assert.deepEqual(requestSegments(encoded, { windows: false }), { segments: names, slash });
      // A raw "%" starts an escape: names holding one are asked for encoded only.
      if (!names.some((n) => n.includes('%'))) assert.deepEqual(requestSegments(raw, { windows: false }), { segments: names, slash });
    }), RUNS.paths);
  });

  it(`read any Range field into ranges within the file, apart, at most ${MAX_RANGES}, never more bytes than the file (${runs(RUNS.ranges)} runs)`, () => {
    const rangeField = fc.oneof(
      fc.string({ unit: fc.constantFrom(...'bytes=0123456789-, \t;x'), maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.array(fc.constantFrom('0-', '-0', '-5', '5-', '3-7', '7-3', '0-0', '99-', '-99', '', ' ', '10-20', '999999999999999999999-'),
        { maxLength: 120 }).map((specs) => `bytes=${specs.join(',')}`)
    );
    check(fc.property(rangeField, fc.nat(200), (value, size) => {
      const ranges = withinTime(() => parseRange(value, size));
      if (ranges === null || ranges === 'unsatisfiable') return;
      assert.ok(ranges.length >= 1 && ranges.length <= MAX_RANGES);
      let total = 0;
      for (const { start, end } of ranges) {
        assert.ok(Number.isInteger(start) && Number.isInteger(end) && start >= 0 && start <= end && end < size, `${start}-${end}/${size}`);
        total += end - start + 1;
      }
      const sorted = ranges.slice().sort((a, b) => a.start - b.start);
      for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i].start > sorted[i - 1].end + 1, 'ranges apart');
      assert.ok(total <= size);
    }), RUNS.ranges);
  });

  it(`cover exactly the bytes the satisfiable ranges asked, 416 when none, and write them back in multipart (${runs(RUNS.ranges)} runs)`, () => {
    const spec = fc.oneof(
      fc.tuple(fc.nat(120), fc.option(fc.nat(120), { nil: null })).filter(([first, last]) => last === null || last >= first)
        .map(([first, last]) => ({ first, last })),
      fc.nat(130).map((suffix) => ({ suffix }))
    );
    const ows = fc.constantFrom('', ' ', '\t', ' \t');
    check(fc.property(fc.array(fc.tuple(spec, ows, ows), { minLength: 1, maxLength: 12 }), fc.nat(100), (specs, size) => {
      const value = `bytes=${specs.map(([s, before, after]) => `${before}${'suffix' in s ? `-${s.suffix}` : `${s.first}-${s.last === null ? '' : s.last}`}${after}`).join(',')}`;
      const asked = new Set();
      let emptySuffix = false;
      for (const [s] of specs) {
        const [start, end] = 'suffix' in s ? [size - s.suffix, size - 1] : [s.first, s.last === null ? size - 1 : Math.min(s.last, size - 1)];
        if ('suffix' in s && s.suffix > 0 && size === 0) emptySuffix = true;
        if ('suffix' in s && s.suffix === 0) continue;
        for (let i = Math.max(0, start); i <= end; i++) asked.add(i);
      }
      const ranges = parseRange(value, size);
      if (emptySuffix) return assert.equal(ranges, null);
      if (asked.size === 0) return assert.equal(ranges, 'unsatisfiable');
      const covered = new Set(ranges.flatMap(({ start, end }) => Array.from({ length: end - start + 1 }, (_, i) => start + i)));
      assert.deepEqual([...covered].sort((a, b) => a - b), [...asked].sort((a, b) => a - b));

      const file = Buffer.from(Array.from({ length: size }, (_, i) => i));
      const multipart = multipartByteranges(ranges, size, 'application/octet-stream');
      const boundary = multipart.contentType.slice('multipart/byteranges; boundary='.length);
      const body = Buffer.concat([...multipart.parts.flatMap((part) => [part.head, file.subarray(part.start, part.end + 1)]), multipart.tail]);
      assert.equal(body.length, multipart.contentLength);
      const text = body.toString('latin1');
      assert.ok(text.startsWith(`--${boundary}\r\n`) && text.endsWith(`\r\n--${boundary}--\r\n`));
      const parts = text.slice(0, -`\r\n--${boundary}--\r\n`.length).slice(`--${boundary}\r\n`.length).split(`\r\n--${boundary}\r\n`);
      assert.equal(parts.length, ranges.length);
      parts.forEach((part, i) => {
        const [head, data] = [part.slice(0, part.indexOf('\r\n\r\n')), part.slice(part.indexOf('\r\n\r\n') + 4)];
        assert.equal(head, `Content-Type: application/octet-stream\r\nContent-Range: bytes ${ranges[i].start}-${ranges[i].end}/${size}`);
        assert.equal(data, file.subarray(ranges[i].start, ranges[i].end + 1).toString('latin1'));
      });
    }), RUNS.ranges);
  });

  it(`read an HTTP-date in each of its three forms as the time written, and anything else as NaN or a whole second (${runs(RUNS.dates)} runs)`, () => {
    const time = fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2069, 11, 31) }).map((ms) => ms - (ms % 1000));
    check(fc.property(time, fc.string({ unit: 'binary', maxLength: 40 }), (ms, junk) => {
      const date = new Date(ms);
      const [day, month, year] = [date.getUTCDate(), formatHttpDate(ms).slice(8, 11), date.getUTCFullYear()];
      const clock = formatHttpDate(ms).slice(17, 25);
      const longDay = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'][date.getUTCDay()];
      const rfc850 = `${longDay}, ${String(day).padStart(2, '0')}-${month}-${String(year % 100).padStart(2, '0')} ${clock} GMT`;
      const asctime = `${longDay.slice(0, 3)} ${month} ${String(day).padStart(2, ' ')} ${clock} ${year}`;
      // RFC 850's years from 1971 to 2069 are within 50 years of 2020 (1970 would be read 2070).
      const now = Date.UTC(2020, 0, 1);

      assert.equal(parseHttpDate(formatHttpDate(ms)), ms);
      assert.equal(parseHttpDate(asctime), ms);
      assert.equal(parseHttpDate(rfc850, now), ms);
      const other = withinTime(() => parseHttpDate(junk));
      assert.ok(Number.isNaN(other) || other % 1000 === 0);
    }), RUNS.dates);
  });

  it(`read a list of entity tags back as written, whatever whitespace and empty elements are between (${runs(RUNS.tags)} runs)`, () => {
    const opaque = fc.string({ unit: fc.constantFrom(...'abcXYZ019-_,/W!#~\u00e9'), maxLength: 8 }).map((text) => `"${text}"`);
    const separator = fc.constantFrom(',', ', ', ' ,', ',,', ' , ,\t');
    check(fc.property(fc.array(fc.tuple(fc.boolean(), opaque, separator), { maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 20 }), (tags, junk) => {
      const value = tags.map(([weak, tag, sep], i) => `${weak ? 'W/' : ''}${tag}${i < tags.length - 1 ? sep : ''}`).join('');
      assert.deepEqual(entityTags(value), tags.map(([weak, tag]) => ({ weak, opaque: tag })));
      const other = withinTime(() => entityTags(junk));
      assert.ok(other === null || Array.isArray(other));
    }), RUNS.tags);
  });

  it(`list any names as links that lead back to them and text that reads them, nothing unescaped (${runs(RUNS.listing)} runs)`, () => {
    const entry = fc.record({ name: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }), directory: fc.boolean(), size: fc.nat(), mtimeMs: fc.nat(4102444800000) });
    const unescape = (text) => text.replace(/&lt;|&gt;|&quot;|&#39;|&amp;/g, (e) => ({ '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&amp;': '&' })[e]);
    check(fc.property(fc.uniqueArray(entry, { selector: (e) => e.name, maxLength: 8 }), (entries) => {
      const html = listingHtml('/x/', entries);
      const links = [...html.matchAll(/<a href="([^"<>]*)">([^<>]*)<\/a>/g)].slice(1);
      const shown = entries.filter((e) => !e.name.startsWith('.'));
      assert.equal(links.length, shown.length);
      assert.equal(html.split('<a ').length - 2, shown.length);
      const read = links.map(([, href, text]) => ({ href: decodeURIComponent(unescape(href)), text: unescape(text) }));
      for (const e of shown) {
        const slash = e.directory ? '/' : '';
        assert.ok(read.some(({ href, text }) => href === `${e.name}${slash}` && text === `${e.name}${slash}`), e.name);
      }
      for (const [, href] of links) assert.match(href, /^[A-Za-z0-9%\-_.!~*()&#;]+\/?$/);
    }), RUNS.listing);
  });

  it(`send the sibling the client weighs highest, never one it refuses, identity when it weighs that higher (${runs(RUNS.accept)} runs)`, () => {
    const element = fc.tuple(fc.constantFrom('br', 'zstd', 'gzip', 'x-gzip', 'identity', '*', 'deflate', 'GZIP', 'Br'),
      fc.option(fc.constantFrom('0', '0.0', '0.001', '0.5', '0.8', '1', '1.000', '2', 'x'), { nil: null }));
    const accept = fc.array(element, { maxLength: 6 }).map((parts) => parts.map(([c, q]) => (q === null ? c : `${c};q=${q}`)).join(', '));
    const siblings = fc.subarray(['br', 'zstd', 'gzip']).map((codings) => codings.map((coding) => ({ coding })));
    check(fc.property(accept, siblings, (value, present) => {
      const weights = new Map();
      for (const part of value === '' ? [] : value.split(', ')) {
        const [coding, q] = part.split(';q=');
        const key = coding.toLowerCase() === 'x-gzip' ? 'gzip' : coding.toLowerCase();
        const weight = q === undefined ? 1 : /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(q) ? Number(q) : 0;
        if (!weights.has(key)) weights.set(key, weight);
      }
      const weightOf = (coding) => (weights.has(coding) ? weights.get(coding) : weights.has('*') ? weights.get('*') : coding === 'identity' ? 0.0001 : 0);
      const chosen = chooseSibling(value, present);
      const best = Math.max(0, ...present.map(({ coding }) => weightOf(coding)));
      if (chosen === null) {
        assert.ok(value === '' || best === 0 || best < weightOf('identity'), `${value}: none sent though ${best}`);
      } else {
        assert.equal(weightOf(chosen.coding), best);
        assert.ok(best > 0 && best >= weightOf('identity'));
        const order = ['br', 'zstd', 'gzip'];
        for (const { coding } of present) if (weightOf(coding) === best) return assert.ok(order.indexOf(coding) >= order.indexOf(chosen.coding));
      }
    }), RUNS.accept);
  });
});

describe(`files: resolveFile on a real tree, as a property (seed ${seed()})`, () => {
  let base;
  let root;

  before(() => {
    base = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), 'lila-files-prop-')));
    root = nodePath.join(base, 'www');
    fs.mkdirSync(nodePath.join(root, 'sub'), { recursive: true });
    fs.mkdirSync(nodePath.join(root, '.well-known'));
    for (const file of ['a', 'b.txt', 'sub/a', 'sub/b.txt', '.env', '.well-known/a', '\u00e9']) fs.writeFileSync(nodePath.join(root, file), file);
    fs.writeFileSync(nodePath.join(base, 'passwd'), 'outside');
    fs.symlinkSync('/etc', nodePath.join(root, 'etc'));
    fs.symlinkSync('..', nodePath.join(root, 'up'));
    fs.symlinkSync('sub', nodePath.join(root, 'link'));
    fs.symlinkSync('/etc/passwd', nodePath.join(root, 'sub', 'passwd'));
  });

  after(() => fs.rmSync(base, { recursive: true, force: true }));

  it(`serves nothing whose real path lies outside the root, for any path, through the threadpool or not (${runs(RUNS.files)} runs)`, async () => {
    await check(fc.asyncProperty(path, async (p) => {
      const found = await resolveFile(root, p);
      const answer = ({ stat, ...rest }) => ({ ...rest, ino: stat && stat.ino });
      assert.deepEqual(answer(resolveFileSync(root, p)), answer(found));
      if (found.kind === 'file' || found.kind === 'directory') {
        const real = found.kind === 'file' ? found.file : found.dir;
        assert.ok(within(real, root), `${p} -> ${real}`);
        assert.ok(within(fs.realpathSync(real), root), `${p} -> ${real}`);
      } else {
        assert.ok(found.kind === 'missing' || [400, 404].includes(found.status), JSON.stringify(found));
      }
    }), RUNS.files);
  });
});
