'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Pki } = require('./pki');
const { cleanup, onCleanup, startHttpBackend, startLila } = require('./helpers');
const { findTool, needTool, runTool } = require('./tools');
// --h2-engine's choices, written here: lila's own h2, and core http2.
const H2_ENGINES = ['lila', 'node'];

// .ci/run builds h2spec 2.2.1 (the last version the Go module proxy serves) into
// $(go env GOPATH)/bin and exports LILA_H2SPEC; `go install`'s default place is looked in too.
const TOOL = { name: 'h2spec', env: 'LILA_H2SPEC', install: 'go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible' };
const H2SPEC = findTool({ ...TOOL, dirs: [path.join(os.homedir(), 'go', 'bin')] });
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/*
 * The cases lila fails with --h2-engine node because Node's http2 (nghttp2 underneath) fails them, by Node major:
 * h2spec against a bare http2.createServer and http2.createSecureServer (answering once the
 * request's body is in, as the backend here does) on that Node version fails each of them the
 * same way, with the same last frame or timeout (`actual`, h2spec's "Actual" line). A listed case
 * that passes, or fails otherwise, fails the test, as does any other case that does not pass.
 */
const CLOSED_STREAM = 'Node ignores a frame on a closed stream instead of answering STREAM_CLOSED';
const PRIORITY_IGNORED = 'the nghttp2 of Node 22 and later ignores PRIORITY frames (RFC 9113 deprecates their scheme), ' +
  'where h2spec wants a PROTOCOL_ERROR';
const COMMON = {
  'http2/5.1/8': nodeFails('closed: Sends a DATA frame after sending RST_STREAM frame', 'Timeout',
    `${CLOSED_STREAM}: a DATA frame after the client's RST_STREAM`),
  'http2/5.1/9': nodeFails('closed: Sends a HEADERS frame after sending RST_STREAM frame', 'Timeout',
    `${CLOSED_STREAM}: a HEADERS frame after the client's RST_STREAM`),
  'http2/5.1/11': nodeFails('closed: Sends a DATA frame', 'Timeout',
    `${CLOSED_STREAM}: a DATA frame after the response ended the stream`),
  'http2/5.1/12': nodeFails('closed: Sends a HEADERS frame', 'Timeout',
    `${CLOSED_STREAM}: a HEADERS frame after the response ended the stream`),
  'http2/5.1.1/2': nodeFails('Sends stream identifier that is numerically smaller than previous',
    'DATA Frame (length:14, flags:0x01, stream_id:5)',
    'Node ignores HEADERS on stream 3 after stream 5 and answers stream 5, where h2spec wants a PROTOCOL_ERROR GOAWAY'),
  'http2/6.7/2': nodeFails('Sends a PING frame with ACK', 'Connection closed',
    'Node takes a PING ACK it did not ask for as a connection error (GOAWAY INTERNAL_ERROR, closed), where h2spec wants it ignored')
};
const NODE_FAILURES = {
  20: {
    ...COMMON,
    'http2/6.9.1/2': nodeFails('Sends multiple WINDOW_UPDATE frames increasing the flow control window to above 2^31-1',
      'GOAWAY Frame (length:8, flags:0x00, stream_id:0)',
      "Node 20 answers the connection window's overflow with GOAWAY INTERNAL_ERROR, not FLOW_CONTROL_ERROR")
  },
  22: {
    ...COMMON,
    'http2/5.3.1/2': nodeFails('Sends PRIORITY frame that depend on itself', 'Timeout', PRIORITY_IGNORED),
    'http2/6.3/1': nodeFails('Sends a PRIORITY frame with 0x0 stream identifier', 'Timeout', PRIORITY_IGNORED),
    'http2/6.9.1/3': nodeFails('Sends multiple WINDOW_UPDATE frames increasing the flow control window to above 2^31-1 on a stream',
      'Connection closed',
      "Node 22 and later answer a stream window's overflow with GOAWAY FLOW_CONTROL_ERROR, closing the whole connection, " +
        'where h2spec wants the stream reset')
  }
};
NODE_FAILURES[24] = NODE_FAILURES[22];
NODE_FAILURES[26] = NODE_FAILURES[22];

// The one case lila fails of its own, on a plain listener only.
const PLAIN_LISTENER_FAILURES = {
  'http2/3.5/2': {
    title: 'Sends invalid connection preface',
    actual: 'Error: http2: failed reading the frame payload: unexpected EOF, note that the frame header looked like an HTTP/1.1 header',
    reason: 'a plain listener serves HTTP/1.1 and h2c prior knowledge on one port: bytes that are not the h2 preface ' +
      'are an HTTP/1.1 request, answered 400, not a GOAWAY'
  }
};

describe(`h2spec ${NODE_MAJOR in NODE_FAILURES ? '' : '(no list for this Node major) '}against lila (Node ${NODE_MAJOR})`, function () {
  // Each run takes 10 to 15 s, most of it h2spec's 2 s timeouts on the cases Node fails; the four run at once.
  this.timeout(60000);
  const reports = {};

  before(async function () {
    needTool(this, H2SPEC, TOOL);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-h2spec-'));
    onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    const pki = new Pki();
    onCleanup(() => pki.remove());
    const certificate = pki.issue({ names: ['localhost'], ips: ['127.0.0.1'] });
    // Reads every request's body before it answers; a body of 5 bytes or more, or h2spec skips
    // 6.9.2/2 (and 5.1.1/2's last frame above is this body's DATA frame).
    const backend = await startHttpBackend('A', (req, res) => {
      req.resume();
      req.on('end', () => res.end('from backend A'));
    });
    const lila = (engine, tls) => startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0', '--h2-engine', engine,
      ...(tls ? ['--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile] : [])]);
    await Promise.all(H2_ENGINES.flatMap((engine) => ['h2c', 'tls'].map(async (listener) => {
      const tls = listener === 'tls';
      reports[`${engine} ${listener}`] = await runH2spec(await lila(engine, tls), tls ? ['-t', '-k'] : [], path.join(dir, `${engine}-${listener}.xml`));
    })));
  });
  after(cleanup);

  for (const engine of H2_ENGINES) {
    for (const listener of ['h2c', 'tls']) {
      // lila's own h2 fails no case of its own; core http2 those Node fails.
      const engineFailures = engine === 'lila' ? {} : NODE_FAILURES[NODE_MAJOR];
      const known = { ...engineFailures, ...(listener === 'h2c' ? PLAIN_LISTENER_FAILURES : {}) };
      const nodeFailures = Object.keys(engineFailures || {}).map((id) => id.slice('http2/'.length)).join(', ');
      const but = engine === 'lila' ? '' : ` but those Node ${NODE_MAJOR} fails (${nodeFailures})`;
      const title = `--h2-engine ${engine}: passes every case on ${listener === 'h2c' ? 'an h2c' : 'a TLS'} listener${but}` +
        (listener === 'h2c' ? `${but === '' ? ' but' : ' and'} 3.5/2 (an HTTP/1.1 port too)` : '');
      it(title, () => {
        if (engine === 'node') {
          assert.ok(NODE_MAJOR in NODE_FAILURES, `no list of the cases Node ${NODE_MAJOR} fails: run h2spec against a bare ` +
            `http2.createServer and createSecureServer on Node ${NODE_MAJOR} and add one to NODE_FAILURES`);
        }
        const { cases, output } = reports[`${engine} ${listener}`];
        assert.ok(cases.length >= 145, `h2spec reported ${cases.length} cases; its output:\n${output}`);

        const problems = [];
        for (const { id, title, outcome, actual } of cases) {
          const expected = known[id];
          if (expected === undefined && outcome !== 'passed') problems.push(`${id} (${title}) ${outcome}: ${actual}`);
          if (expected === undefined) continue;
          if (outcome === 'passed') problems.push(`${id} (${title}) passes now: take it off the list (${expected.reason})`);
          else if (title !== expected.title || actual !== expected.actual) {
            problems.push(`${id} (${title}) ${outcome} otherwise than listed (${expected.actual}: ${expected.reason}): ${actual}`);
          }
        }
        const missing = Object.keys(known).filter((id) => !cases.some((c) => c.id === id));
        for (const id of missing) problems.push(`${id} (${known[id].title}) is not in h2spec's report`);
        assert.deepEqual(problems, [], `h2spec against lila's ${listener} listener (--h2-engine ${engine}):\n${problems.join('\n')}`);
      });
    }
  }
});

// A case Node's http2 fails: its title, h2spec's "Actual" line, and why.
function nodeFails(title, actual, why) {
  return { title, actual, reason: `${why}; a bare http2.createServer and createSecureServer on the same Node fail it the same way` };
}

/**
 * Runs h2spec against a lila and reads its JUnit report.
 *
 * @param {{port: number, stderr: string}} lila
 * @param {string[]} args
 * @param {string} report where h2spec writes the report
 * @returns {Promise<{cases: {id: string, title: string, outcome: string, actual: string}[], output: string}>}
 */
async function runH2spec(lila, args, report) {
  const { code, output } = await runTool(H2SPEC, ['-h', '127.0.0.1', '-p', String(lila.port), '-j', report, ...args]);
  // h2spec exits 1 when a case fails, and also, without a report, when it cannot go on.
  if (!fs.existsSync(report)) {
    throw new Error(`h2spec exited with ${code} and no report; its output:\n${output.slice(-3000)}\nlila's stderr:\n${lila.stderr}`);
  }
  return { cases: parseJUnit(fs.readFileSync(report, 'utf8')), output };
}

/**
 * The cases of h2spec's JUnit report. A testsuite is a section (its package, e.g. http2/5.1),
 * its testcases that section's cases in order, numbered from 1 as h2spec numbers them
 * (`http2/5.1/8`); a failure's text is the expected frames, then the actual one.
 *
 * @param {string} xml
 * @returns {{id: string, title: string, outcome: 'passed' | 'failed' | 'skipped', actual: string}[]}
 */
function parseJUnit(xml) {
  const cases = [];
  for (const [, attributes, body] of xml.matchAll(/<testsuite\b([^>]*)>([^]*?)<\/testsuite>/g)) {
    const section = unescapeXml(/\bpackage="([^"]*)"/.exec(attributes)[1]);
    let number = 0;
    for (const [, caseAttributes, inner = ''] of body.matchAll(/<testcase\b([^>]*?)(?:\/>|>([^]*?)<\/testcase>)/g)) {
      number++;
      const title = unescapeXml(/\bclassname="([^"]*)"/.exec(caseAttributes)[1]);
      const failure = /<(error|failure)\b[^>]*>([^]*?)<\/\1>/.exec(inner);
      const outcome = failure !== null ? 'failed' : /<skipped\b/.test(inner) ? 'skipped' : 'passed';
      const actual = failure === null ? '' : unescapeXml(failure[2]).trim().split('\n').pop();
      cases.push({ id: `${section}/${number}`, title, outcome, actual });
    }
  }
  return cases;
}

function unescapeXml(text) {
  return text.replace(/&(?:#x([0-9a-f]+)|#(\d+)|(lt|gt|amp|quot|apos));/gi, (_, hex, decimal, name) => {
    if (hex !== undefined) return String.fromCodePoint(parseInt(hex, 16));
    if (decimal !== undefined) return String.fromCodePoint(Number(decimal));
    return { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }[name.toLowerCase()];
  });
}
