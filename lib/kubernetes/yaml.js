'use strict';

const { LilaError, codes } = require('../errors');

// Double-quoted escapes besides \x, \u and \U.
const ESCAPES = {
  0: '\0', a: '\x07', b: '\b', t: '\t', '\t': '\t', n: '\n', v: '\v', f: '\f', r: '\r', e: '\x1b', ' ': ' ',
  '"': '"', '/': '/', '\\': '\\', N: '\x85', _: '\xa0', L: '\u2028', P: '\u2029'
};
const HEX_LENGTH = { x: 2, u: 4, U: 8 };

/**
 * Reads the YAML kubectl writes (kubeconfig files) and any JSON text: block
 * mappings and sequences, plain and quoted scalars, `|` and `>` blocks,
 * comments, and flow `{}`/`[]` collections. Anchors, aliases, tags and
 * several documents are refused.
 *
 * @param {string} text
 * @returns {any} null for an empty document
 * @throws {LilaError} CONFIG: `line N: why`
 */
function parse(text) {
  return new Reader(String(text)).document();
}

module.exports = { parse };

class Reader {
  constructor(text) {
    // Each line: its number, its indentation and what follows it (comments still in).
    this.lines = text.replace(/^\ufeff/, '').split(/\r?\n/).map((raw, i) => {
      const indent = /^ */.exec(raw)[0].length;
      return { number: i + 1, indent, text: raw.slice(indent) };
    });
    this.row = 0;
  }

  document() {
    this.skipDirectives();
    const value = this.next() === null ? null : this.node(-1, -1);
    const rest = this.next();
    if (rest !== null) this.fail(rest, `unexpected "${clip(rest.text)}" (indentation?)`);
    // next() stops at a document marker: after one, nothing but another marker or comments.
    for (let row = this.row + 1; row < this.lines.length; row++) {
      const line = this.lines[row];
      if (content(line.text) !== '' && !isMarker(line)) this.fail(line, 'more than one document');
    }
    return value;
  }

  skipDirectives() {
    for (; this.row < this.lines.length; this.row++) {
      const line = this.lines[this.row];
      if (content(line.text) === '' || (line.indent === 0 && line.text.startsWith('%'))) continue;
      if (line.indent === 0 && /^---(\s|$)/.test(line.text)) {
        line.text = line.text.slice(3).trimStart();
        if (content(line.text) === '') this.row++;
      }
      return;
    }
  }

  // The next line with content (blank and comment lines skipped), or null.
  next() {
    while (this.row < this.lines.length) {
      const line = this.lines[this.row];
      if (isMarker(line)) return null;
      if (line.text.startsWith('\t') && content(line.text) !== '') this.fail(line, 'a tab in indentation');
      if (content(line.text) !== '') return line;
      this.row++;
    }
    return null;
  }

  // The node whose first line is the next one, indented more than `parent`.
  node(parent, sequenceParent) {
    const line = this.next();
    if (line === null || line.indent <= parent) {
      // A sequence may sit at its key's own indentation, as kubectl writes it.
      if (line !== null && line.indent === parent && line.indent > sequenceParent && isItem(line.text)) return this.sequence(line.indent);
      return null;
    }
    if (isItem(line.text)) return this.sequence(line.indent);
    if (keyOf(line) !== null) return this.mapping(line.indent);
    return this.inline(line, 0, parent);
  }

  mapping(indent) {
    const map = {};
    for (let line = this.next(); line !== null && line.indent === indent; line = this.next()) {
      if (isItem(line.text)) break;
      const found = keyOf(line);
      if (found === null) this.fail(line, `expected "key: value", received "${clip(line.text)}"`);
      if (Object.hasOwn(map, found.key)) this.fail(line, `duplicate key "${found.key}"`);
      const rest = found.rest;
      let value;
      if (content(rest) === '') {
        this.row++;
        value = this.node(indent, -1);
      } else {
        value = this.inline(line, line.text.length - rest.length, indent);
      }
      Object.defineProperty(map, found.key, { value, enumerable: true, writable: true, configurable: true });
    }
    return this.checkDedent(map, indent);
  }

  sequence(indent) {
    const list = [];
    for (let line = this.next(); line !== null && line.indent === indent && isItem(line.text); line = this.next()) {
      const rest = line.text.slice(1).replace(/^ +/, '');
      if (content(rest) === '') {
        this.row++;
        list.push(this.node(indent, indent));
      } else {
        // The item's content becomes a line of its own, at its column: `- name: x` is a mapping there.
        line.indent += line.text.length - rest.length;
        line.text = rest;
        list.push(isItem(rest) ? this.sequence(line.indent) : keyOf(line) !== null ? this.mapping(line.indent) : this.inline(line, 0, indent));
      }
    }
    return this.checkDedent(list, indent);
  }

  checkDedent(value, indent) {
    const line = this.next();
    if (line !== null && line.indent > indent) this.fail(line, `unexpected indentation before "${clip(line.text)}"`);
    return value;
  }

  // A value that starts on `line` at column `at`: a flow collection, a quoted or plain scalar, a block scalar.
  inline(line, at, parent) {
    const text = line.text.slice(at);
    const first = text[0];
    if (first === '&' || first === '*' || first === '!') this.fail(line, 'anchors, aliases and tags are not supported');
    if (first === '|' || first === '>') return this.block(line, text, parent);
    if (first === '{' || first === '[' || first === '"' || first === "'") {
      const cursor = { row: this.row, col: at };
      const value = first === '"' || first === "'" ? this.quoted(cursor, parent) : this.flow(cursor);
      const after = this.lines[cursor.row];
      if (content(after.text.slice(cursor.col)) !== '') this.fail(after, `unexpected "${clip(after.text.slice(cursor.col).trim())}" after a value`);
      this.row = cursor.row + 1;
      return value;
    }
    const words = [content(text)];
    this.row++;
    // A plain scalar goes on over the lines indented more than its key.
    for (let next = this.next(); next !== null && next.indent > parent; next = this.next()) {
      words.push(content(next.text));
      this.row++;
    }
    const plain = words.join(' ');
    if (/:( |$)/.test(plain) || /^- /.test(plain)) this.fail(line, `a value may not hold ": " unquoted: "${clip(plain)}"`);
    return scalar(plain);
  }

  block(line, header, parent) {
    const match = /^([|>])([-+]?)([1-9]?)([-+]?)\s*(#.*)?$/.exec(header);
    if (match === null) this.fail(line, `a block scalar header "${clip(header)}" is not understood`);
    const chomp = match[2] || match[4];
    this.row++;
    let indent = match[3] ? parent + Number(match[3]) : null;
    const body = [];
    for (; this.row < this.lines.length; this.row++) {
      const { indent: at, text } = this.lines[this.row];
      if (text === '') {
        body.push('');
        continue;
      }
      if (indent === null) indent = at;
      if (at < indent || at <= parent) break;
      body.push(' '.repeat(at - indent) + text);
    }
    const trailing = body.length - body.findLastIndex((l) => l !== '') - 1;
    const lines = body.slice(0, body.length - trailing);
    let value = match[1] === '|' ? lines.join('\n') : fold(lines);
    if (chomp === '+') value += '\n'.repeat(trailing + (lines.length > 0 ? 1 : 0));
    else if (chomp !== '-' && lines.length > 0) value += '\n';
    return value;
  }

  // A flow collection (JSON included), read over as many lines as it takes.
  flow(cursor) {
    const line = this.lines[cursor.row];
    if (cursor.opened === undefined) cursor.opened = line;
    const open = this.peek(cursor);
    cursor.col++;
    const close = open === '{' ? '}' : ']';
    const result = open === '{' ? {} : [];
    for (;;) {
      this.space(cursor);
      if (this.peek(cursor) === close) {
        cursor.col++;
        return result;
      }
      const key = this.flowValue(cursor, open === '{');
      this.space(cursor);
      if (open === '{') {
        if (this.peek(cursor) !== ':') this.fail(this.lines[cursor.row], 'expected ":" in a flow mapping');
        cursor.col++;
        this.space(cursor);
        const value = [',', '}'].includes(this.peek(cursor)) ? null : this.flowValue(cursor, false);
        if (typeof key === 'object') this.fail(line, 'a flow mapping key must be a scalar');
        Object.defineProperty(result, key, { value, enumerable: true, writable: true, configurable: true });
        this.space(cursor);
      } else {
        result.push(key);
      }
      const c = this.peek(cursor);
      if (c === ',') cursor.col++;
      else if (c !== close) this.fail(this.lines[Math.min(cursor.row, this.lines.length - 1)], `expected "," or "${close}" in a flow collection`);
    }
  }

  flowValue(cursor, isKey) {
    const c = this.peek(cursor);
    if (c === '{' || c === '[') return this.flow(cursor);
    if (c === '"' || c === "'") return this.quoted(cursor, -1);
    const text = this.lines[cursor.row].text;
    let end = cursor.col;
    while (end < text.length && !',[]{}'.includes(text[end]) && !(text[end] === ':' && (isKey || /[\s,\]}]/.test(text[end + 1] || ' ')))) {
      if (text[end] === '#' && /\s/.test(text[end - 1])) break;
      end++;
    }
    const plain = text.slice(cursor.col, end).trim();
    if (plain === '') this.fail(this.lines[cursor.row], `unexpected "${clip(text.slice(cursor.col))}" in a flow collection`);
    cursor.col = end;
    return isKey ? plain : scalar(plain);
  }

  // A quoted scalar; a line break inside it folds to a space (an empty line to "\n").
  quoted(cursor, parent) {
    const start = this.lines[cursor.row];
    const quote = this.peek(cursor);
    cursor.col++;
    let value = '';
    for (;;) {
      const line = this.lines[cursor.row];
      const text = line.text;
      let escapedBreak = false;
      if (cursor.row !== start.number - 1 && line.indent <= parent && text !== '') this.fail(start, 'a quoted scalar is not closed');
      let i = cursor.col;
      for (; i < text.length; i++) {
        const c = text[i];
        if (c === quote) {
          if (quote === "'" && text[i + 1] === "'") {
            value += "'";
            i++;
            continue;
          }
          cursor.col = i + 1;
          return value;
        }
        if (c === '\\' && quote === '"') {
          const e = text[++i];
          if (e === undefined) {
            escapedBreak = true;
            break;
          }
          if (HEX_LENGTH[e]) {
            const hex = text.slice(i + 1, i + 1 + HEX_LENGTH[e]);
            if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== HEX_LENGTH[e]) this.fail(line, `a bad escape "\\${e}${hex}"`);
            value += String.fromCodePoint(parseInt(hex, 16));
            i += hex.length;
          } else if (Object.hasOwn(ESCAPES, e)) {
            value += ESCAPES[e];
          } else {
            this.fail(line, `an unknown escape "\\${e}"`);
          }
          continue;
        }
        value += c;
      }
      // The line ends inside the quotes.
      if (!escapedBreak) value = value.replace(/[ \t]+$/, '');
      cursor.row++;
      if (cursor.row >= this.lines.length) this.fail(start, 'a quoted scalar is not closed');
      let blanks = 0;
      while (cursor.row < this.lines.length - 1 && this.lines[cursor.row].text === '') {
        blanks++;
        cursor.row++;
      }
      if (!escapedBreak) value += blanks > 0 ? '\n'.repeat(blanks) : ' ';
      cursor.col = 0;
    }
  }

  // The next character of a flow value, "\n" at a line's end; comments and line ends are skipped by space().
  peek(cursor) {
    if (cursor.row >= this.lines.length) this.fail(cursor.opened, 'a flow collection is not closed');
    const text = this.lines[cursor.row].text;
    return cursor.col < text.length ? text[cursor.col] : '\n';
  }

  space(cursor) {
    for (;;) {
      if (cursor.row >= this.lines.length) return;
      const text = this.lines[cursor.row].text;
      while (cursor.col < text.length && /\s/.test(text[cursor.col])) cursor.col++;
      if (cursor.col < text.length && text[cursor.col] !== '#') return;
      if (cursor.row === this.lines.length - 1) this.fail(cursor.opened, 'a flow collection is not closed');
      cursor.row++;
      cursor.col = 0;
    }
  }

  fail(line, why) {
    throw new LilaError(codes.CONFIG, `line ${line.number}: ${why}`);
  }
}

// A line's text without its comment and trailing blanks: a "#" after a blank (or first) outside quotes.
function content(text) {
  let quote = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === '\\' && quote === '"') i++;
      else if (c === "'" && quote === "'" && text[i + 1] === "'") i++;
      else if (c === quote) quote = null;
    } else if ((c === '"' || c === "'") && (i === 0 || /[\s[{,:]/.test(text[i - 1]))) {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]))) {
      return text.slice(0, i).trimEnd();
    }
  }
  return text.trimEnd();
}

function isMarker(line) {
  return line.indent === 0 && /^(---|\.\.\.)(\s|$)/.test(line.text);
}

function isItem(text) {
  return text === '-' || text.startsWith('- ') || /^-\s*#/.test(text);
}

// `key: rest` of a mapping line, or null when the line is no mapping entry.
function keyOf(line) {
  const text = line.text;
  if (text[0] === '"' || text[0] === "'") {
    const reader = new Reader(text);
    const cursor = { row: 0, col: 0 };
    let key;
    try {
      key = reader.quoted(cursor, -1);
    } catch {
      return null;
    }
    const after = text.slice(cursor.col);
    const match = /^ *:([ \t]+|$)/.exec(after);
    return match === null ? null : { key, rest: after.slice(match[0].length) };
  }
  if ('[{#&*!|>%@`'.includes(text[0])) return null;
  const stripped = content(text);
  const match = /:([ \t]+|$)/.exec(stripped);
  if (match === null) return null;
  return { key: stripped.slice(0, match.index).trimEnd(), rest: text.slice(match.index + match[0].length) };
}

// A plain scalar's value: YAML 1.2's core schema.
function scalar(text) {
  if (text === '' || text === '~' || /^(null|Null|NULL)$/.test(text)) return null;
  if (/^(true|True|TRUE)$/.test(text)) return true;
  if (/^(false|False|FALSE)$/.test(text)) return false;
  if (/^[-+]?[0-9]+$/.test(text)) return Number(text);
  if (/^0x[0-9a-fA-F]+$/.test(text)) return parseInt(text.slice(2), 16);
  if (/^0o[0-7]+$/.test(text)) return parseInt(text.slice(2), 8);
  if (/^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.test(text)) return Number(text);
  if (/^[-+]?\.(inf|Inf|INF)$/.test(text)) return text[0] === '-' ? -Infinity : Infinity;
  if (/^\.(nan|NaN|NAN)$/.test(text)) return NaN;
  return text;
}

// A folded block's lines: a break between two lines of text is a space, an empty line a "\n"
// (the break before it dropped), and more indented lines keep theirs.
function fold(lines) {
  let out = lines.length > 0 ? lines[0] : '';
  const plain = (l) => l !== '' && !/^\s/.test(l);
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const previous = lines[i - 1];
    if (line === '') out += '\n';
    else if (previous === '') out += line;
    else out += (plain(previous) && plain(line) ? ' ' : '\n') + line;
  }
  return out;
}

function clip(text) {
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}
