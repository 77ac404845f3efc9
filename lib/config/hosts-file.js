'use strict';

const { readText } = require('./read-text');
const { parseServer } = require('../balancing/server-address');
const { LilaError, codes } = require('../errors');

/**
 * Reads a hosts file: one server a line, `host:port` then optional
 * `weight=N`, `backup` and `name=X` separated by spaces; `#` starts a
 * comment; blank lines are skipped.
 *
 * @param {string} file
 * @returns {{name: string, host: string, port: number, weight: number, backup: boolean}[]}
 * @throws {LilaError} `LILA_ERR_HOSTS_FILE` naming `file:line` and the problem
 */
function readHostsFile(file) {
  return parseHostsFile(readText(file, 'hosts file', codes.HOSTS_FILE), file);
}

/**
 * @param {string} text the file's content
 * @param {string} file its name, for messages
 * @returns {ReturnType<typeof parseServer>[]}
 * @throws {LilaError} `LILA_ERR_HOSTS_FILE`
 */
function parseHostsFile(text, file) {
  const servers = [];
  const lines = new Map();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') return;
    const where = `${file}:${index + 1}`;
    let server;
    try {
      server = parseServer(line.split(/\s+/).join(','));
    } catch (err) {
      throw new LilaError(codes.HOSTS_FILE, `${where}: ${err.message}`);
    }
    if (lines.has(server.name)) {
      throw new LilaError(codes.HOSTS_FILE, `${where}: server "${server.name}" is already on line ${lines.get(server.name)}`);
    }
    lines.set(server.name, index + 1);
    servers.push(server);
  });
  if (servers.length === 0) throw new LilaError(codes.HOSTS_FILE, `${file}: no servers in the file`);
  return servers;
}

module.exports = { readHostsFile, parseHostsFile };
