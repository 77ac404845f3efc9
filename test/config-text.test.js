'use strict';

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fc = require('fast-check');
const { readConfigText } = require('../lib/config/config-text');
const { LilaError } = require('../lib/errors');
const { check, runs, seed, withinTime } = require('./property-run');

const RUNS = { files: 1000, shell: 200, anything: 1000 };

describe('config text', () => {
  it('reads the example of the README into blocks of words', () => {
    const text = [
      '# /etc/lila/lila.conf',
      '--admin 127.0.0.1:9000          # a global option, as on the command line',
      '--log-format json',
      '',
      'pool api p2c --health-check --health-path /healthz --max-conns 100',
      '  10.0.0.1:8080 weight=3        # a server a line, as in a hosts file',
      '  10.0.0.2:8080',
      'pool api-canary round-robin 10.0.0.9:8080',
      '',
      'listen 443 --tls-cert /etc/lila/certs --redirect-http 80',
      '  route api.example.com/v1 api=95 api-canary=5',
      '  route * web --response-header "X-Frame-Options: DENY"',
      ''
    ].join('\n');
    assert.deepEqual(readConfigText(text, 'lila.conf'), [
      { line: 2, words: ['--admin', '127.0.0.1:9000'], children: [] },
      { line: 3, words: ['--log-format', 'json'], children: [] },
      {
        line: 5,
        words: ['pool', 'api', 'p2c', '--health-check', '--health-path', '/healthz', '--max-conns', '100'],
        children: [
          { line: 6, words: ['10.0.0.1:8080', 'weight=3'] },
          { line: 7, words: ['10.0.0.2:8080'] }
        ]
      },
      { line: 8, words: ['pool', 'api-canary', 'round-robin', '10.0.0.9:8080'], children: [] },
      {
        line: 10,
        words: ['listen', '443', '--tls-cert', '/etc/lila/certs', '--redirect-http', '80'],
        children: [
          { line: 11, words: ['route', 'api.example.com/v1', 'api=95', 'api-canary=5'] },
          { line: 12, words: ['route', '*', 'web', '--response-header', 'X-Frame-Options: DENY'] }
        ]
      }
    ]);
  });

  it('reads nothing from an empty file, or one of blank and comment lines', () => {
    assert.deepEqual(readConfigText('', 'f'), []);
    assert.deepEqual(readConfigText('\n \t\n# only\n   # indented comment\n\n', 'f'), []);
  });

  // [text, the words of its one line]
  const words = [
    ['a b\tc   d \t', ['a', 'b', 'c', 'd']],
    ['a #b c', ['a']],
    ['a\t#b', ['a']],
    ['a#b c#', ['a#b', 'c#']],
    ['a "#b" \'#c\' \\#d', ['a', '#b', '#c', '#d']],
    ["a ''#b", ['a', '#b']],
    ['a ""#b', ['a', '#b']],
    ['a #"unclosed', ['a']],
    ['--x="a b" --y=\'c  d\'', ['--x=a b', '--y=c  d']],
    ['"a"\'b\'c"d e"', ['abcd e']],
    ['"" \'\' a""b', ['', '', 'ab']],
    ['"\\" \\\\ \\$ \\`"', ['" \\ $ `']],
    ['"\\n \\a \\# \\\'"', ['\\n \\a \\# \\\'']],
    ['"it\'s" \'say "hi"\'', ["it's", 'say "hi"']],
    ["'a\\b' 'a\\'", ['a\\b', 'a\\']],
    ["'it'\\''s'", ["it's"]],
    ['a\\ b \\"c \\\'d \\\\e \\x', ['a b', '"c', "'d", '\\e', 'x']],
    ['a\\\tb', ['a\tb']],
    ['"a\tb"', ['a\tb']],
    ['$HOME `id` * ~ [a] {a,b} a?', ['$HOME', '`id`', '*', '~', '[a]', '{a,b}', 'a?']],
    ['"$HOME" \'$HOME\'', ['$HOME', '$HOME']],
    ['x=\u00e9 \u{1f600} "\u2028" \u00a0', ['x=\u00e9', '\u{1f600}', '\u2028', '\u00a0']],
    ['a\ufeff \ufeffb', ['a\ufeff', '\ufeffb']]
  ];
  for (const [text, expected] of words) {
    it(`splits ${JSON.stringify(text)} as a shell does`, () => {
      assert.deepEqual(readConfigText(text, 'f'), [{ line: 1, words: expected, children: [] }]);
    });
  }

  it('gives an indented line, with spaces or a tab, to the last line that is not, past blank and comment lines', () => {
    const text = 'a\n  b\n\n# c\n\t  # d\n\tc d\nx\ny\n \t z\n';
    assert.deepEqual(readConfigText(text, 'f'), [
      { line: 1, words: ['a'], children: [{ line: 2, words: ['b'] }, { line: 6, words: ['c', 'd'] }] },
      { line: 7, words: ['x'], children: [] },
      { line: 8, words: ['y'], children: [{ line: 9, words: ['z'] }] }
    ]);
  });

  it('counts a quoted word as the start of a line, so that it is not indented', () => {
    assert.deepEqual(readConfigText('a\n" b"\n', 'f'), [
      { line: 1, words: ['a'], children: [] },
      { line: 2, words: [' b'], children: [] }
    ]);
  });

  it('accepts CRLF line endings and ignores a leading byte order mark', () => {
    assert.deepEqual(readConfigText('\ufeffa b\r\n  c\r\n\r\nd "e f"\r\n', 'f'), [
      { line: 1, words: ['a', 'b'], children: [{ line: 2, words: ['c'] }] },
      { line: 4, words: ['d', 'e f'], children: [] }
    ]);
    assert.deepEqual(readConfigText('\ufeff  # comment\r\na', 'f'), [{ line: 2, words: ['a'], children: [] }]);
  });

  // [text, message], with 'lila.conf' as the file's name
  const errors = [
    ['a\nb "c d\n', 'lila.conf:2: the quote opened here is not closed'],
    ["a\n\nb 'c d\n", 'lila.conf:3: the quote opened here is not closed'],
    ['"a\\"', 'lila.conf:1: the quote opened here is not closed'],
    ['"a\\', 'lila.conf:1: the quote opened here is not closed'],
    ["'a\\'b'", 'lila.conf:1: the quote opened here is not closed'],
    ['a "b\nc" d', 'lila.conf:1: the quote opened here is not closed'],
    ['a\r\nb \'c\r\n', 'lila.conf:2: the quote opened here is not closed'],
    ['  a\nb\n', 'lila.conf:1: an indented line needs a line above it to belong to'],
    ['# intro\n\n\tpool a\n', 'lila.conf:3: an indented line needs a line above it to belong to'],
    ['\ufeff a', 'lila.conf:1: an indented line needs a line above it to belong to'],
    ['a \\\nb', 'lila.conf:1: a backslash ends the line, and a line does not go on to the next'],
    ['a\n\nb\n\nc\x07', 'lila.conf:5: a control character (0x07) is not allowed'],
    ['a\0b', 'lila.conf:1: a control character (0x00) is not allowed'],
    ['a\n# \x1b[31m\n', 'lila.conf:2: a control character (0x1b) is not allowed'],
    ['a "\x7f"', 'lila.conf:1: a control character (0x7f) is not allowed'],
    ['a\vb', 'lila.conf:1: a control character (0x0b) is not allowed'],
    ['a\fb', 'lila.conf:1: a control character (0x0c) is not allowed'],
    ['a\rb\n', 'lila.conf:1: a control character (0x0d) is not allowed'],
    ['a\n\r\r\n', 'lila.conf:2: a control character (0x0d) is not allowed']
  ];
  for (const [text, message] of errors) {
    it(`names the file and line: ${message} (${JSON.stringify(text)})`, () => {
      assert.throws(() => readConfigText(text, 'lila.conf'), (err) => {
        assert.ok(err instanceof LilaError);
        assert.equal(err.code, 'LILA_ERR_CONFIG');
        assert.equal(err.message, message);
        assert.equal(err.isUsageError, true);
        return true;
      });
    });
  }

  it('names the file as it is given', () => {
    assert.throws(() => readConfigText('"', '/etc/lila/lila.conf'), {
      message: '/etc/lila/lila.conf:1: the quote opened here is not closed'
    });
  });
});

describe(`config text, as properties (seed ${seed()})`, () => {
  it(`reads back the blocks, words and line numbers a file was written with (${runs(RUNS.files)} runs)`, () => {
    check(fc.property(configFile(wordChar()), ({ text, blocks }) => {
      assert.deepEqual(withinTime(() => readConfigText(text, 'f')), blocks);
    }), RUNS.files);
  });

  // The shell expands `$`, backquotes, globs (`*`, `?`, `[`) and `~`, where lila keeps them as
  // they are; `{` too, where /bin/sh is bash (brace expansion). So the words of this generator
  // have none of them, quoted or not; the other properties cover them.
  it(`splits a line into the words /bin/sh gives (${runs(RUNS.shell)} runs)`, () => {
    check(fc.property(configLine(wordChar('$`*?[~{')), ({ text, words }) => {
      const read = readConfigText(text, 'f');
      assert.deepEqual(read, [{ line: 1, words, children: [] }]);
      assert.deepEqual(shellWords(text), words, `sh on ${JSON.stringify(text)}`);
    }), RUNS.shell);
  });

  it(`reads any text, or refuses it with one line naming the file and a line of it (${runs(RUNS.anything)} runs)`, () => {
    const unit = fc.oneof(wordChar(), fc.constantFrom('\n', '\r\n', '\r', '\0', '\x07', '\x1b', '\x7f', '\ufeff', '  '));
    check(fc.property(fc.string({ unit, maxLength: 60 }), (text) => {
      let blocks;
      try {
        blocks = withinTime(() => readConfigText(text, 'f'));
      } catch (err) {
        assert.ok(err instanceof LilaError, String(err));
        assert.equal(err.code, 'LILA_ERR_CONFIG');
        const match = /^f:(\d+): [^\r\n]+$/.exec(err.message);
        assert.ok(match, err.message);
        assert.ok(Number(match[1]) <= text.split('\n').length, err.message);
        return;
      }
      for (const block of blocks) {
        assert.ok(block.words.length > 0 && block.children.every((child) => child.words.length > 0 && child.line > block.line));
      }
    }), RUNS.anything);
  });
});

// Characters words are made of: the ones a shell treats apart, often; printable ASCII; and any
// other printable code point (no surrogate halves: a file is UTF-8).
function wordChar(excluded = '') {
  const special = [...' \t\'"\\#$`*?[~|&;<>(){}=!'].filter((c) => !excluded.includes(c));
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...special) },
    { weight: 4, arbitrary: fc.integer({ min: 0x21, max: 0x7e }).map((n) => String.fromCharCode(n)).filter((c) => !excluded.includes(c)) },
    { weight: 1, arbitrary: fc.integer({ min: 0xa0, max: 0x10ffff }).filter((n) => n < 0xd800 || n > 0xdfff).map((n) => String.fromCodePoint(n)) }
  );
}

// A word as a shell would need it written: up to three parts, each bare (backslashes where
// needed), in single quotes, or in double quotes (every backslash escaped, or only those that
// need it), joined without space.
function word(char) {
  const part = fc.record({
    value: fc.array(char, { maxLength: 6 }).map((chars) => chars.join('')),
    style: fc.constantFrom('bare', 'single', 'double', 'double-minimal')
  });
  return fc.array(part, { minLength: 1, maxLength: 3 }).map((parts) => {
    let text = '';
    for (const { value, style } of parts) text += quote(value, style, text === '');
    return { value: parts.map((p) => p.value).join(''), text: text === '' ? "''" : text };
  });
}

function quote(value, style, startsWord) {
  if (style === 'single') return `'${value.replaceAll("'", "'\\''")}'`;
  if (style === 'double') return `"${value.replace(/["\\$`]/g, '\\$&')}"`;
  // A backslash before anything but `"`, `\`, `$` and a backquote stays itself; the closing quote follows the last.
  if (style === 'double-minimal') return `"${value.replace(/["$`]|\\(?=["\\$`]|$)/g, '\\$&')}"`;
  const bare = value.replace(/[ \t'"\\|&;<>()$`*?[~\ufeff]/gu, '\\$&');
  // `#` starts a comment only where a word starts: elsewhere it is written as it is.
  return startsWord && bare.startsWith('#') ? `\\${bare}` : bare;
}

// A line of words: separated by spaces and tabs, maybe trailing white space and a comment.
function configLine(char, indented = false) {
  const space = fc.constantFrom(' ', '\t', '  ', ' \t');
  const comment = fc.array(wordChar(), { maxLength: 10 }).map((chars) => `#${chars.join('')}`);
  return fc.record({
    indent: indented ? space : fc.constant(''),
    words: fc.array(fc.tuple(word(char), space), { minLength: 1, maxLength: 5 }),
    end: fc.option(fc.tuple(space, fc.option(comment)))
  }).map(({ indent, words, end }) => {
    let text = indent + words.map(([w, s], i) => (i === 0 ? '' : s) + w.text).join('');
    if (end !== null) text += end[0] + (end[1] ?? '');
    return { text, words: words.map(([w]) => w.value) };
  });
}

// A file of blocks, with blank and comment lines between its lines, LF or CRLF, maybe a BOM,
// and the blocks readConfigText should give back.
function configFile(char) {
  const noise = fc.array(fc.constantFrom('', '  ', '\t', '# comment', '  # "indented\' comment'), { maxLength: 2 });
  const block = fc.record({
    head: fc.tuple(noise, configLine(char)),
    children: fc.array(fc.tuple(noise, configLine(char, true)), { maxLength: 3 })
  });
  return fc.record({
    blocks: fc.array(block, { maxLength: 4 }),
    eol: fc.constantFrom('\n', '\r\n'),
    bom: fc.boolean(),
    last: fc.boolean()
  }).map(({ blocks, eol, bom, last }) => {
    const lines = [];
    const add = ([before, line]) => {
      lines.push(...before, line.text);
      return { line: lines.length, words: line.words };
    };
    const expected = blocks.map(({ head, children }) => ({ ...add(head), children: children.map(add) }));
    const text = (bom ? '\ufeff' : '') + lines.join(eol) + (last && lines.length > 0 ? eol : '');
    return { text, blocks: expected };
  });
}

// The words /bin/sh makes of a line, given to `set --` as script text (not as an argument, which
// it would not split); a newline after it, so that a comment ends there.
function shellWords(line) {
  const script = `set -- ${line}\nfor a in "$@"; do printf '%s\\0' "$a"; done`;
  const result = spawnSync('sh', ['-c', script], { encoding: 'utf8' });
  assert.equal(result.status, 0, `sh: ${result.stderr}`);
  return result.stdout.split('\0').slice(0, -1);
}
