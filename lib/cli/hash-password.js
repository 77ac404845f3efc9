'use strict';

const { parseArgs } = require('node:util');
const { StringDecoder } = require('node:string_decoder');
const { hashPassword } = require('../actions/password-hash');
const { argumentProblem } = require('../config/options');
const { HASH_PASSWORD_HELP } = require('./help');

// A line from a pipe longer than this is no password.
const MAX_LINE = 4096;

/**
 * `lila hash-password [--user NAME]`: reads a password (no echo on a
 * terminal, the first line of a pipe) and prints lila's scrypt hash of it,
 * or a whole htpasswd line.
 *
 * @param {string[]} args the arguments after `hash-password`
 * @param {{stdin: NodeJS.ReadableStream & {isTTY?: boolean, setRawMode?: Function},
 *   stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream}} io
 * @returns {Promise<number>} the exit code: 0, or 2 for a usage error
 */
async function runHashPassword(args, io) {
  const { stdin, stdout, stderr } = io;
  const usageError = (message) => {
    stderr.write(`lila: hash-password: ${message}\nTry "lila hash-password --help" for more information.\n`);
    return 2;
  };
  let values;
  try {
    ({ values } = parseArgs({ args, options: { user: { type: 'string', short: 'u' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (err) {
    return usageError(argumentProblem(err));
  }
  if (values.help) {
    stdout.write(HASH_PASSWORD_HELP);
    return 0;
  }
  const user = values.user;
  if (user !== undefined && (user === '' || /[:\s\x00-\x1f\x7f]/.test(user))) {
    return usageError(`the user name "${user}" is empty or has a ":", a space or a control character`);
  }
  let password;
  if (stdin.isTTY === true && typeof stdin.setRawMode === 'function') {
    password = await readTyped(stdin, stderr, 'Password: ');
    const again = password === null || password === '' ? password : await readTyped(stdin, stderr, 'Again: ');
    if (again !== password) return usageError('the two passwords differ');
  } else {
    password = await readLine(stdin);
  }
  if (password === null) return usageError(`no password read (a line of at most ${MAX_LINE} bytes)`);
  if (password === '') return usageError('the password is empty');
  const hash = await hashPassword(password);
  stdout.write(user === undefined ? `${hash}\n` : `${user}:${hash}\n`);
  return 0;
}

module.exports = { runHashPassword };

// A password typed on a terminal, not echoed: Enter ends it, Backspace takes back, Ctrl-C gives up (null).
function readTyped(stdin, stderr, prompt) {
  return new Promise((resolve) => {
    stderr.write(prompt);
    const decoder = new StringDecoder('utf8');
    let typed = [];
    const done = (value) => {
      stdin.removeListener('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      stderr.write('\n');
      resolve(value);
    };
    const onData = (chunk) => {
      for (const char of decoder.write(chunk)) {
        if (char === '\r' || char === '\n') return done(typed.join(''));
        if (char === '\u0003' || (char === '\u0004' && typed.length === 0)) return done(null);
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else if (char >= ' ') typed.push(char);
      }
      return undefined;
    };
    stdin.setRawMode(true);
    stdin.on('data', onData);
    stdin.resume();
  });
}

// The first line of a pipe (without its \r\n), or null when it is too long or nothing came.
function readLine(stdin) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    const finish = (value) => {
      stdin.removeListener('data', onData);
      stdin.removeListener('end', onEnd);
      stdin.removeListener('error', reject);
      stdin.pause();
      resolve(value);
    };
    const onData = (chunk) => {
      const bytes = Buffer.from(chunk);
      const newline = bytes.indexOf(0x0a);
      chunks.push(newline === -1 ? bytes : bytes.subarray(0, newline));
      size += bytes.length;
      if (newline !== -1) finish(Buffer.concat(chunks).toString('utf8').replace(/\r$/, ''));
      else if (size > MAX_LINE) finish(null);
    };
    const onEnd = () => finish(size === 0 ? null : Buffer.concat(chunks).toString('utf8').replace(/\r$/, ''));
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.on('error', reject);
    stdin.resume();
  });
}
