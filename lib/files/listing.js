'use strict';

const { decodedPath } = require('./path-segments');

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
const STYLE = 'body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}' +
  'th,td{padding:.2em 1em;text-align:left}td.size{text-align:right}a{text-decoration:none}';

/**
 * The page `--browse` answers for a directory without an index: HTML5, its
 * title and heading the path asked (decoded, escaped), a link to `../`
 * (but at the root), then one row per entry, directories first, each group
 * by name (code point order, the same on every machine): the name escaped,
 * its link relative (the name percent-encoded, `/` after a directory's),
 * its size (a file's) and modification time (UTC). Dotfiles are left out
 * here too, whatever `entries` holds.
 *
 * @param {string} urlPath the path the client asked, as received (percent-encoded), ending with `/`
 * @param {{name: string, directory: boolean, size: number, mtimeMs: number}[]} entries
 *   as `directoryEntries` (`entries.js`) gives them
 * @returns {string} the page; send it as `text/html; charset=utf-8`
 */
function listingHtml(urlPath, entries) {
  const decoded = decodedPath(urlPath);
  const title = escapeHtml(`Index of ${decoded === null ? urlPath : decoded}`);
  const rows = [];
  if (urlPath !== '/') rows.push('<tr><td><a href="../">../</a></td><td></td><td></td></tr>');
  const shown = entries.filter((entry) => !entry.name.startsWith('.')).sort(byKindThenName);
  for (const { name, directory, size, mtimeMs } of shown) {
    const slash = directory ? '/' : '';
    const href = escapeHtml(`${encodeURIComponent(name)}${slash}`);
    const iso = new Date(mtimeMs).toISOString();
    rows.push(`<tr><td><a href="${href}">${escapeHtml(name)}${slash}</a></td>` +
      `<td class="size">${directory ? '' : sizeText(size)}</td>` +
      `<td><time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')}</time></td></tr>`);
  }
  return '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    `<title>${title}</title>\n<style>${STYLE}</style>\n</head>\n<body>\n<h1>${title}</h1>\n` +
    '<table>\n<thead><tr><th>Name</th><th>Size</th><th>Modified (UTC)</th></tr></thead>\n<tbody>\n' +
    `${rows.join('\n')}\n</tbody>\n</table>\n</body>\n</html>\n`;
}

/**
 * Text made safe in HTML content and quoted attribute values.
 *
 * @param {string} text
 * @returns {string}
 */
function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

module.exports = { listingHtml, escapeHtml };

function byKindThenName(a, b) {
  if (a.directory !== b.directory) return a.directory ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function sizeText(size) {
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${size} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
}
