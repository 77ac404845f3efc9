'use strict';

const { LilaError, codes } = require('../errors');

// C0 controls but tab, and DEL: invisible in an editor, so never meant. A CR is one too, once
// CRLF is split off: a lone CR would make the line show differently from how it is read.
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;
// What a backslash escapes inside double quotes, as in a POSIX shell; before anything else it is kept.
const DOUBLE_QUOTED_ESCAPES = '"\\$`';

/**
 * Splits the text of a config file into lines of words, as a POSIX shell
 * splits a command line (quotes, backslashes, `#` comments), without its
 * expansions: `$`, backquotes, `*` and `~` are plain characters. A line that
 * starts with a space or a tab belongs to the block of the last line that
 * did not; blank and comment-only lines are skipped, and a line never goes
 * on to the next.
 *
 * @param {string} text the file's content
 * @param {string} file its name, for messages
 * @returns {{line: number, words: string[], children: {line: number, words: string[]}[]}[]}
 *   the top-level lines in order, each with its indented lines; `line` is 1-based
 * @throws {LilaError} `LILA_ERR_CONFIG` naming `file:line` and the problem
 */
function readConfigText(text, file) {
  const blocks = [];
  text.replace(/^\uFEFF/, '').split(/\r?\n/).forEach((raw, index) => {
    const fail = (problem) => {
      throw new LilaError(codes.CONFIG, `${file}:${index + 1}: ${problem}`);
    };
    // Checked before the words, so that a control byte in a comment or a quote is found too.
    const control = CONTROL.exec(raw);
    if (control !== null) fail(`a control character (0x${hex(control[0])}) is not allowed`);
    const words = splitWords(raw, fail);
    if (words.length === 0) return;
    if (raw[0] !== ' ' && raw[0] !== '\t') {
      blocks.push({ line: index + 1, words, children: [] });
    } else if (blocks.length === 0) {
      fail('an indented line needs a line above it to belong to');
    } else {
      blocks[blocks.length - 1].children.push({ line: index + 1, words });
    }
  });
  return blocks;
}

module.exports = { readConfigText };

function splitWords(raw, fail) {
  const words = [];
  // null between words; '' is a word begun, as `''` begins one (and after it `#` is no comment).
  let word = null;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === ' ' || c === '\t') {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === '#' && word === null) {
      break;
    } else if (c === "'") {
      const end = raw.indexOf("'", i + 1);
      if (end === -1) fail('the quote opened here is not closed');
      word = (word ?? '') + raw.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let part = '';
      for (i++; i < raw.length && raw[i] !== '"'; i++) {
        if (raw[i] === '\\' && i + 1 < raw.length && DOUBLE_QUOTED_ESCAPES.includes(raw[i + 1])) i++;
        part += raw[i];
      }
      if (i === raw.length) fail('the quote opened here is not closed');
      word = (word ?? '') + part;
    } else if (c === '\\') {
      // A shell would join the next line; lila keeps one line one line, so says so.
      if (i + 1 === raw.length) fail('a backslash ends the line, and a line does not go on to the next');
      word = (word ?? '') + raw[++i];
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

function hex(c) {
  return c.charCodeAt(0).toString(16).padStart(2, '0');
}
