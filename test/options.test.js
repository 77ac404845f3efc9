'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { OPTIONS, GROUPS, scopeText, parseArgsOptions, readOptions } = require('../lib/config/options');
const { helpText, configHelpText, optionSignature } = require('../lib/cli/help');
const { parseConfig } = require('../lib/config/config-file');
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

/**
 * One option's entry in `--help`: its signature and description as one line.
 *
 * @param {string} help
 * @param {string} signature as `optionSignature` writes it
 * @returns {string}
 */
function helpEntry(help, signature) {
  const lines = help.split('\n');
  const start = lines.findIndex((line) => line === `  ${signature}` || line.startsWith(`  ${signature}  `));
  assert.notEqual(start, -1, `--help lists ${signature}`);
  let end = start + 1;
  while (end < lines.length && lines[end].startsWith(' '.repeat(24))) end++;
  return lines.slice(start, end).join(' ').replace(/\s+/g, ' ').trim();
}

/**
 * The options `lila help config` lists under each kind of line, by its title (`[pool]`): the
 * words of the indented lines below the title, or after "either:" on its own line.
 *
 * @param {string} text
 * @returns {Record<string, string[]>}
 */
function scopeLists(text) {
  const section = text.slice(text.indexOf('\nWhere options go'), text.indexOf('\nReload:'));
  const lists = {};
  let title = null;
  for (const line of section.split('\n')) {
    const head = /^ {2}(\[[^\]]+\]|The command line only)/.exec(line);
    if (head !== null) {
      title = head[1];
      lists[title] = line.includes(' either: ') ? line.slice(line.indexOf(' either: ') + 9).split(' ') : [];
    } else if (line.startsWith('    ') && title !== null) {
      lists[title].push(...line.trim().split(' '));
    }
  }
  return lists;
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
        signature: optionSignature(option), help: option.help, default: option.default, scope: scopeText(option)
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

    it('tags every option with where it goes in a config file, and a command line option with nothing', () => {
      const tags = {
        global: '[global]', pool: '[pool]', listener: '[listen]', layer: '[pool, listen]', route: '[route]', 'listener-route': '[listen or route]',
        match: '[route line]', command: ''
      };
      for (const option of OPTIONS) {
        // A route line takes --hash-key too: the key of its split.
        const place = option.name === 'hash-key' ? '[pool, route]' : tags[option.scope];
        // The layers it acts in, when not every one, before the place: [http pool].
        const tag = option.layers === undefined ? place : `[${option.layers.join(' or ')} ${place.slice(1)}`;
        const entry = helpEntry(helpText(), optionSignature(option));
        assert.ok(tag === '' ? !entry.endsWith(']') : entry.endsWith(` ${tag}`), `${option.name}: ${entry}`);
      }
    });

    it('keeps every line within 80 columns', () => {
      for (const line of helpText().split('\n')) assert.ok(line.length <= 80, line);
    });
  });

  describe('lila help config', () => {
    it('lists every option of the table under the lines that take it, in its order', () => {
      const titles = {
        global: '[global]', pool: '[pool]', listener: '[listen]', layer: '[pool, listen]', route: '[route]', 'listener-route': '[listen or route]',
        match: '[route line]', command: 'The command line only'
      };
      const expected = {};
      for (const option of OPTIONS) (expected[titles[option.scope]] ??= []).push(`--${option.name}`);

      assert.deepEqual(scopeLists(configHelpText()), expected);
    });

    it('shows an example file that lila reads as it is', () => {
      const text = configHelpText();
      const example = text.slice(text.indexOf('  # lila.conf\n'), text.indexOf('\nLines:')).split('\n').map((line) => line.slice(2)).join('\n');
      const model = parseConfig(example, 'example');

      assert.deepEqual(model.pools.map((pool) => pool.name), ['api', 'canary', 'web', 'pg']);
      assert.deepEqual(model.listeners.map((listener) => listener.routes.length), [4, 1]);
      assert.deepEqual(model.warnings, []);
    });

    it('keeps every line within 80 columns', () => {
      for (const line of configHelpText().split('\n')) assert.ok(line.length <= 80, line);
    });
  });
});
