'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { OPTIONS, GROUPS, SCOPE_TEXT, parseArgsOptions, readOptions } = require('../lib/config/options');
const { helpText, optionSignature } = require('../lib/cli/help');
const { runLila } = require('./helpers');

const README = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');

/**
 * The rows of README's option reference: the table under "## Options", as
 * `{signature, help, default}` with the Markdown taken out (code spans, `\|`)
 * and a trailing "(see <section>)" pointer dropped.
 */
function readmeOptions() {
  const section = README.slice(README.indexOf('\n## Options\n'), README.indexOf('\n## ', README.indexOf('\n## Options\n') + 1));
  const rows = section.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| option ') && !line.startsWith('| ---'));
  return rows.map((row) => {
    const cells = row.slice(2, -2).split(/ \| ?/).map((cell) => cell.replace(/\\\|/g, '|'));
    const plain = (text) => text.replace(/`/g, '').trim();
    return {
      signature: plain(cells[0]),
      help: plain(cells[1]).replace(/ \(see [A-Z][\w ]*\)$/, ''),
      default: plain(cells[2] || ''),
      scope: plain(cells[3] || '')
    };
  });
}

describe('options', () => {
  describe('the option table', () => {
    it('names every option once, with a group --help knows and a one-letter short name at most', () => {
      const names = OPTIONS.map((option) => option.name);
      assert.deepEqual(names, [...new Set(names)]);
      const shorts = OPTIONS.filter((option) => option.short !== undefined).map((option) => option.short);
      assert.deepEqual(shorts, [...new Set(shorts)]);
      for (const option of OPTIONS) {
        assert.ok(Object.hasOwn(GROUPS, option.group), `${option.name} has group ${option.group}`);
        assert.ok(option.short === undefined || /^[a-zA-Z]$/.test(option.short), option.name);
        assert.ok(option.help.length > 0 && !option.help.endsWith('.'), `${option.name}: one sentence without a full stop`);
      }
    });

    it('gives parseArgs a string for options with a value and a boolean for flags', () => {
      const table = parseArgsOptions();
      assert.deepEqual(table.port, { type: 'string', short: 'p' });
      assert.deepEqual(table.watch, { type: 'boolean' });
      assert.deepEqual(Object.keys(table), OPTIONS.map((option) => option.name));
    });

    it('reads values into createProxy options and the command line\'s own', () => {
      const read = readOptions({
        port: '0', timeout: '2m', 'keepalive-timeout': '0', 'no-location-rewrite': true, 'fail-on-5xx': true, 'drain-timeout': '1s', admin: '[::1]:9000'
      });

      assert.deepEqual(read, {
        proxy: { timeout: 120000, keepAliveTimeout: 0, locationRewrite: false, failOn5xx: true },
        actions: {},
        port: 0,
        'drain-timeout': 1000,
        admin: { host: '::1', port: 9000, text: '[::1]:9000' }
      });
    });

    it('names the option and the value it refuses', () => {
      assert.throws(() => readOptions({ 'health-rise': '0' }), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: '"--health-rise" must be an integer of 1 or more, received "0"'
      });
      assert.throws(() => readOptions({ workers: '257' }), {
        code: 'LILA_ERR_INVALID_OPTION',
        message: '"--workers" must be auto or an integer from 1 to 256, received "257"'
      });
    });
  });

  describe('README', () => {
    it('lists exactly the options of the table, in its order, with the same sentence and default', () => {
      const expected = OPTIONS.map((option) => ({
        signature: optionSignature(option), help: option.help, default: option.default, scope: SCOPE_TEXT[option.scope]
      }));

      assert.deepEqual(readmeOptions(), expected);
    });

    it('names exactly the global options a reload applies', () => {
      const sentence = README.replace(/\s+/g, ' ').match(/A reload applies changes to (.*?) \(replacing/);
      assert.notEqual(sentence, null, 'the sentence is in README');
      const named = sentence[1].match(/`--[a-z-]+`/g).map((name) => name.slice(3, -1));
      assert.deepEqual(named.sort(), OPTIONS.filter((option) => option.reloads === true).map((option) => option.name).sort());
    });
  });

  describe('--help', () => {
    it('lists every option of the table under its group, with its default', async () => {
      const { stdout, code } = await runLila(['--help']);

      assert.equal(code, 0);
      assert.equal(stdout, helpText());
      for (const option of OPTIONS) {
        const title = `\n${GROUPS[option.group]}:\n`;
        const from = stdout.indexOf(title);
        const to = stdout.indexOf('\n\n', from + title.length);
        const section = stdout.slice(from, to);
        assert.ok(from !== -1 && section.includes(`  ${optionSignature(option)}`), `--help lists ${option.name} under ${GROUPS[option.group]}`);
        if (option.arg !== undefined && !/^(|none|off.*)$/.test(option.default)) {
          assert.ok(section.replace(/\s+/g, ' ').includes(`(default ${option.default})`), `--help gives the default of ${option.name}`);
        }
      }
    });

    it('keeps every line within 80 columns', () => {
      for (const line of helpText().split('\n')) assert.ok(line.length <= 80, line);
    });
  });
});
