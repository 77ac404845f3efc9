'use strict';

const { LilaError, codes } = require('./errors');

const DIGITS = /^[0-9]+$/;

/**
 * Checks a listen port: an integer between 0 (any free port) and 65535.
 *
 * @param {unknown} value a number, or the text the user typed
 * @param {string} name the option as the user knows it, e.g. `--port`
 * @returns {number}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validatePort(value, name) {
  const port = typeof value === 'number' ? value : DIGITS.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new LilaError(
      codes.INVALID_OPTION,
      `"${name}" must be an integer between 0 and 65535, received "${value}"`
    );
  }
  return port;
}

/**
 * Checks that a value is one of a fixed set of choices.
 *
 * @param {unknown} value
 * @param {string[]} choices
 * @param {string} name the option as the user knows it, e.g. `--layer`
 * @returns {string}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`
 */
function validateChoice(value, choices, name) {
  if (choices.includes(value)) return value;
  const list = choices.map((choice) => `"${choice}"`).join(' or ');
  throw new LilaError(codes.INVALID_OPTION, `"${name}" must be ${list}, received "${value}"`);
}

module.exports = { validatePort, validateChoice };
