'use strict';

// The shell commands of a Markdown file (README.md, doc/*.md), as the tests that run them read
// them: its fenced blocks, the `lila` lines of its ```sh blocks and the other programs there.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { onCleanup } = require('./helpers');

/**
 * A Markdown file's fenced code blocks.
 *
 * @param {string} text
 * @returns {{lang: string, line: number, lines: {line: number, text: string}[]}[]} line: of the opening fence
 */
function codeBlocks(text) {
  const blocks = [];
  let block = null;
  text.split('\n').forEach((content, index) => {
    const fence = /^```(\S*)\s*$/.exec(content);
    if (fence !== null) {
      if (block === null) block = { lang: fence[1], line: index + 1, lines: [] };
      else {
        blocks.push(block);
        block = null;
      }
      return;
    }
    if (block !== null) block.lines.push({ line: index + 1, text: content });
  });
  return blocks;
}

// The `lila` command lines of the ```sh blocks.
function commandsOf(blocks, variables) {
  const commands = [];
  for (const block of blocks.filter((b) => ['sh', 'bash', 'shell'].includes(b.lang))) {
    for (let i = 0; i < block.lines.length; i++) {
      const first = block.lines[i];
      let text = first.text.replace(/^\$ /, '');
      if (!/^lila(\s|$)/.test(text)) continue;
      while (/\\$/.test(text) && i + 1 < block.lines.length) text = `${text.slice(0, -1).trimEnd()} ${block.lines[++i].text.trim()}`;
      commands.push({ line: first.line, ...command(text, variables) });
    }
  }
  return commands;
}

// The commands of the ```sh blocks that are not lila's: each `&&`-separated part of a line, by
// its program (the word after `sudo`'s is still `sudo`'s: root's).
function otherCommands(blocks) {
  const others = [];
  for (const block of blocks.filter((b) => ['sh', 'bash', 'shell'].includes(b.lang))) {
    for (let i = 0; i < block.lines.length; i++) {
      const first = block.lines[i];
      let text = first.text.replace(/^\$ /, '');
      while (/\\$/.test(text) && i + 1 < block.lines.length) text = `${text.slice(0, -1).trimEnd()} ${block.lines[++i].text.trim()}`;
      for (const part of text.replace(/(^|\s)#.*$/, '').split('&&')) {
        const [program] = part.trim().split(/\s+/);
        if (program !== '' && program !== 'lila') others.push({ line: first.line, program, text: part.trim() });
      }
    }
  }
  return others;
}

// A command line's text (its comment and a trailing `&` taken off) and its arguments after `lila`.
function command(line, variables) {
  const words = shellWords(line, variables);
  if (words[words.length - 1] === '&') words.pop();
  const [program, ...args] = words;
  assert.equal(program, 'lila');
  const text = line.replace(/\s+#.*$/, '').replace(/\s*&$/, '').trim();
  return { text, args };
}

/**
 * Splits a command line into words as a shell would: quotes, backslashes, `$NAME` (`variables`),
 * and a `#` comment. Anything else a shell would do (pipes, redirections, `$(...)`, `;`) is
 * not a plain lila command, and is refused.
 *
 * @param {string} line
 * @param {Record<string, string>} variables what `$NAME` may name
 * @returns {string[]}
 */
function shellWords(line, variables) {
  const words = [];
  let word = null;
  let quote = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (c === '\\' && i + 1 < line.length) {
      word = (word || '') + line[++i];
    } else if (c === '$' && /[A-Za-z_]/.test(line[i + 1] || '')) {
      const name = /^[A-Za-z_]\w*/.exec(line.slice(i + 1))[0];
      assert.ok(Object.hasOwn(variables, name), `the text names $${name}, which this test does not set`);
      word = (word || '') + variables[name];
      i += name.length;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word = word || '';
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === '#' && word === null) {
      break;
    } else {
      assert.ok(!/[|;<>`(){}]/.test(c) && !(c === '&' && line.slice(i + 1).trim() !== ''), `not a plain lila command: ${line}`);
      word = (word || '') + c;
    }
  }
  assert.equal(quote, null, `unclosed quote: ${line}`);
  if (word !== null) words.push(word);
  return words;
}

/**
 * A program of a doc's (`node app.js`), started in `dir`, resolving once it listens (a preload
 * says so); killed at cleanup.
 *
 * @param {string[]} words its command line's words, the program first
 * @param {string} dir
 * @returns {Promise<void>} rejected when it exits first
 */
async function startDocProgram(words, dir) {
  const preload = path.join(dir, 'say-listening.js');
  fs.writeFileSync(preload, "const listen = require('node:net').Server.prototype.listen;\n" +
    "require('node:net').Server.prototype.listen = function (...args) { this.once('listening', () => process.stderr.write('listening\\n')); return listen.apply(this, args); };\n");
  const child = spawn(process.execPath, ['--require', preload, ...words.slice(1)], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const closed = once(child, 'close');
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return closed;
  });
  let said = '';
  child.stderr.setEncoding('utf8');
  await new Promise((resolve, reject) => {
    child.stderr.on('data', (text) => {
      said += text;
      if (said.includes('listening')) resolve();
    });
    child.once('close', () => reject(new Error(`the doc's program exited: ${said}`)));
  });
}

module.exports = { codeBlocks, commandsOf, otherCommands, command, shellWords, startDocProgram };
