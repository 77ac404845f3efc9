'use strict';

const fs = require('node:fs');
const { LilaError } = require('../errors');

/**
 * Reads a file lila was told to read, or says in one line why it cannot.
 *
 * @param {string} file
 * @param {string} what what the file is, for the message (`hosts file`)
 * @param {string} code the `LILA_ERR_*` code of the error
 * @returns {string}
 * @throws {LilaError} `cannot read <what> <file>: no such file`
 */
function readText(file, what, code) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    const reason = err.code === 'ENOENT' ? 'no such file' : err.code === 'EACCES' ? 'permission denied' : err.message;
    throw new LilaError(code, `cannot read ${what} ${file}: ${reason}`);
  }
}

module.exports = { readText };
