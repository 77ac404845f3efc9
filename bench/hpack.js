'use strict';

const { parseArgs } = require('node:util');
const { HpackDecoder, HpackEncoder } = require('../lib/h2/hpack');

// h2load's request, and a browser's (Chrome 13x's navigation), as their pseudo-headers and fields.
const H2LOAD_REQUEST = [
  ':method', 'GET', ':path', '/', ':scheme', 'https', ':authority', '127.0.0.1:8443',
  'accept', '*/*', 'accept-encoding', 'gzip, deflate', 'user-agent', 'h2load nghttp2/1.64.0'
];
const BROWSER_REQUEST = [
  ':method', 'GET', ':authority', 'shop.example.com', ':scheme', 'https', ':path', '/products/42?ref=home&utm_source=newsletter',
  'sec-ch-ua', '"Chromium";v="131", "Not_A Brand";v="24", "Google Chrome";v="131"', 'sec-ch-ua-mobile', '?0',
  'sec-ch-ua-platform', '"Linux"', 'upgrade-insecure-requests', '1',
  'user-agent', 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8',
  'sec-fetch-site', 'same-origin', 'sec-fetch-mode', 'navigate', 'sec-fetch-user', '?1', 'sec-fetch-dest', 'document',
  'referer', 'https://shop.example.com/', 'accept-encoding', 'gzip, deflate, br, zstd', 'accept-language', 'en-GB,en;q=0.9,fr;q=0.8',
  'cookie', 'session=3f9a1c0e5b7d4e2a8c6f1b0d9e7a5c3b; theme=dark; consent=1'
];
// lila's answer relaying a backend's: what a proxied page or API answer carries.
const RESPONSE = [
  ':status', '200', 'server', 'nginx/1.27.3', 'date', 'Mon, 07 Dec 2026 12:00:00 GMT', 'content-type', 'text/html; charset=utf-8',
  'content-length', '5123', 'cache-control', 'private, max-age=0', 'etag', '"6751a2f0-1403"',
  'last-modified', 'Thu, 05 Dec 2026 10:00:00 GMT', 'vary', 'Accept-Encoding', 'strict-transport-security', 'max-age=31536000'
];
const BLOCKS = [['h2load request', H2LOAD_REQUEST], ['browser request', BROWSER_REQUEST], ['response', RESPONSE]];
const ROUNDS = 5;
const BATCH = 2000;

// `node bench/hpack.js [--seconds <s per row and round>]`: decoding and encoding one header block, in
// operations per second (medians of ROUNDS rounds, with their spread). "first" is a block on a new
// connection (every field a literal, Huffman-coded; a new decoder or encoder per operation); "again"
// is the same fields once the connection's dynamic table holds them (what every later request costs).
// Nothing is asserted: each decode is checked against the fields once, before timing.
const { values } = parseArgs({ options: { seconds: { type: 'string', default: '0.4' } } });
const seconds = Number(values.seconds);

console.log(`HPACK (lib/h2/hpack.js), Node ${process.version}, ${ROUNDS} rounds of ${seconds} s per row`);
console.log(['block', 'op', 'connection', 'octets', 'k ops/s', 'spread'].map((text, i) => pad(text, [16, 7, 11, 7, 9, 7][i])).join(' '));
for (const [name, fields] of BLOCKS) {
  const first = new HpackEncoder().encode(fields);
  const warm = new HpackEncoder();
  warm.encode(fields);
  const again = warm.encode(fields);
  const steady = new HpackDecoder();
  steady.decode(first);
  if (JSON.stringify(steady.decode(again)) !== JSON.stringify(fields)) throw new Error(`${name}: decoded otherwise`);
  if (JSON.stringify(new HpackDecoder().decode(first)) !== JSON.stringify(fields)) throw new Error(`${name}: decoded otherwise`);
  const out = Buffer.allocUnsafe(4096);
  row(name, 'decode', 'first', first.length, () => new HpackDecoder().decode(first));
  row(name, 'decode', 'again', again.length, () => steady.decode(again));
  row(name, 'encode', 'first', first.length, () => new HpackEncoder().encode(fields, out));
  row(name, 'encode', 'again', again.length, () => warm.encode(fields, out));
}

function row(name, op, connection, octets, fn) {
  const rates = [];
  for (let round = 0; round < ROUNDS; round++) rates.push(measure(fn));
  rates.sort((a, b) => a - b);
  const median = rates[ROUNDS >> 1];
  const spread = `${(((rates[ROUNDS - 1] - rates[0]) / median) * 100).toFixed(0)}%`;
  console.log([name, op, connection, String(octets), (median / 1000).toFixed(0), spread].map((text, i) => pad(text, [16, 7, 11, 7, 9, 7][i])).join(' '));
}

// Operations per second over `seconds`, timed in batches so the clock costs next to nothing.
function measure(fn) {
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  const start = process.hrtime.bigint();
  let ops = 0;
  let now = start;
  let sink = 0;
  while (now < end) {
    for (let i = 0; i < BATCH; i++) sink += fn().length;
    ops += BATCH;
    now = process.hrtime.bigint();
  }
  if (sink === 0) throw new Error('nothing decoded or encoded');
  return ops / (Number(now - start) / 1e9);
}

function pad(text, width) {
  return text.padEnd(width);
}
