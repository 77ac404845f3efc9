'use strict';

const { negotiate } = require('../http/compression/rules');
const { inspect, inspectSync } = require('./resolve');

// Precompressed siblings as Caddy's `precompressed` and nginx's `gzip_static` (and `brotli_static`)
// find them, preferred in this order on equal weights. zstd needs no zstd in Node: the file is sent as it is.
const SIBLINGS = [
  { coding: 'br', extension: '.br' },
  { coding: 'zstd', extension: '.zst' },
  { coding: 'gzip', extension: '.gz' }
];

/**
 * The precompressed siblings of a file that are there (`FILE.br`,
 * `FILE.zst`, `FILE.gz` beside the path asked), each checked as
 * `resolveFile` checks a file: a regular file whose real path lies under
 * the root (a sibling linked out of the root is not there).
 *
 * @param {{path: string}} found `resolveFile`'s `{kind: 'file'}` answer
 * @param {string} realRoot `fs.realpath` of the root
 * @returns {Promise<{coding: string, file: string, path: string, stat: import('node:fs').Stats}[]>}
 *   in the order br, zstd, gzip; empty when there are none
 */
async function precompressedSiblings(found, realRoot) {
  const inspected = await Promise.all(SIBLINGS.map(({ extension }) => inspect(found.path + extension, realRoot)));
  return present(found, inspected);
}

/**
 * `precompressedSiblings` on the calling thread (see `resolveFileSync`).
 *
 * @param {{path: string}} found
 * @param {string} realRoot
 * @returns {{coding: string, file: string, path: string, stat: import('node:fs').Stats}[]}
 */
function precompressedSiblingsSync(found, realRoot) {
  return present(found, SIBLINGS.map(({ extension }) => inspectSync(found.path + extension, realRoot)));
}

/**
 * The sibling to send for a client's Accept-Encoding (lila's one parser of
 * it, `http/compression/rules.js`): the coding the client weighs highest
 * among the siblings there, br then zstd then gzip on equal weights; none
 * when the client names none of them, refuses them (`q=0`), or weighs
 * identity above them (`gzip;q=0.5, identity`). With `identity;q=0` and no
 * acceptable sibling, none too: the file is sent as it is, as RFC 9110
 * §12.5.3 prefers to a 406.
 *
 * @template {{coding: string}} S
 * @param {string | undefined} acceptEncoding
 * @param {S[]} siblings as precompressedSiblings gives them
 * @returns {S | null}
 */
function chooseSibling(acceptEncoding, siblings) {
  if (siblings.length === 0) return null;
  const coding = negotiate(acceptEncoding, [...siblings.map((sibling) => sibling.coding), 'identity']);
  return siblings.find((sibling) => sibling.coding === coding) || null;
}

module.exports = { precompressedSiblings, precompressedSiblingsSync, chooseSibling, SIBLINGS };

function present(found, inspected) {
  const siblings = [];
  inspected.forEach((sibling, i) => {
    const { coding, extension } = SIBLINGS[i];
    if (sibling.kind === 'file') siblings.push({ coding, file: sibling.real, path: found.path + extension, stat: sibling.stat });
  });
  return siblings;
}
