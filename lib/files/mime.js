'use strict';

// Media types by file extension, lower case: the web's own (WHATWG, IANA's registry, what
// nginx's mime.types and Caddy send), enough for a site, its assets and its downloads.
const TYPES = {
  // Documents and code
  html: 'text/html', htm: 'text/html', xhtml: 'application/xhtml+xml',
  css: 'text/css',
  js: 'text/javascript', mjs: 'text/javascript', cjs: 'text/javascript',
  json: 'application/json', map: 'application/json', jsonld: 'application/ld+json',
  geojson: 'application/geo+json', webmanifest: 'application/manifest+json',
  wasm: 'application/wasm',
  txt: 'text/plain', text: 'text/plain', md: 'text/markdown', markdown: 'text/markdown',
  csv: 'text/csv', tsv: 'text/tab-separated-values', ics: 'text/calendar', vtt: 'text/vtt',
  xml: 'application/xml', xsl: 'application/xslt+xml', rss: 'application/rss+xml', atom: 'application/atom+xml',
  yaml: 'application/yaml', yml: 'application/yaml', toml: 'application/toml',
  pdf: 'application/pdf', rtf: 'application/rtf', epub: 'application/epub+zip',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text', ods: 'application/vnd.oasis.opendocument.spreadsheet',
  // Images
  svg: 'image/svg+xml', png: 'image/png', apng: 'image/apng', gif: 'image/gif',
  jpg: 'image/jpeg', jpeg: 'image/jpeg', jpe: 'image/jpeg', jfif: 'image/jpeg', pjpeg: 'image/jpeg',
  webp: 'image/webp', avif: 'image/avif', jxl: 'image/jxl', heic: 'image/heic', heif: 'image/heif',
  ico: 'image/x-icon', cur: 'image/x-icon', bmp: 'image/bmp', tif: 'image/tiff', tiff: 'image/tiff',
  // Fonts
  woff: 'font/woff', woff2: 'font/woff2', ttf: 'font/ttf', otf: 'font/otf', eot: 'application/vnd.ms-fontobject',
  // Audio and video
  mp4: 'video/mp4', m4v: 'video/mp4', webm: 'video/webm', ogv: 'video/ogg', mov: 'video/quicktime',
  mkv: 'video/x-matroska', avi: 'video/x-msvideo', mpeg: 'video/mpeg', mpg: 'video/mpeg',
  // HLS and DASH, as nginx serves them (.ts is a video segment there, not TypeScript)
  m3u8: 'application/vnd.apple.mpegurl', ts: 'video/mp2t', mpd: 'application/dash+xml',
  ogg: 'audio/ogg', oga: 'audio/ogg', opus: 'audio/ogg', mp3: 'audio/mpeg', wav: 'audio/wav',
  flac: 'audio/flac', aac: 'audio/aac', m4a: 'audio/mp4', mid: 'audio/midi', midi: 'audio/midi',
  // Archives
  zip: 'application/zip', gz: 'application/gzip', tgz: 'application/gzip', tar: 'application/x-tar',
  '7z': 'application/x-7z-compressed', bz2: 'application/x-bzip2', xz: 'application/x-xz',
  zst: 'application/zstd', rar: 'application/vnd.rar', jar: 'application/java-archive'
};
const DEFAULT_TYPE = 'application/octet-stream';
// What a text type's Content-Type says: text is UTF-8 unless a file says otherwise, and a file cannot.
const BY_EXTENSION = new Map(Object.entries(TYPES).map(([extension, type]) => [extension, withCharset(type)]));

/**
 * The Content-Type of a file, from its name's extension (case-insensitive):
 * text types (`text/*`, JSON, XML, SVG, web manifests) with
 * `; charset=utf-8`, and `application/octet-stream` for an extension not in
 * lila's table, or none (`README`, `.env`: a leading dot starts no extension).
 *
 * @param {string} name a file name or path (`/` or the platform's separator between parts)
 * @returns {string}
 */
function contentTypeOf(name) {
  const dot = name.lastIndexOf('.');
  if (dot === -1) return DEFAULT_TYPE;
  const separator = Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\'));
  if (dot <= separator + 1) return DEFAULT_TYPE;
  const type = BY_EXTENSION.get(name.slice(dot + 1).toLowerCase());
  return type === undefined ? DEFAULT_TYPE : type;
}

module.exports = { contentTypeOf, DEFAULT_TYPE };

function withCharset(type) {
  const text = type.startsWith('text/') || type.endsWith('+json') || type.endsWith('+xml') ||
    type === 'application/json' || type === 'application/xml';
  return text ? `${type}; charset=utf-8` : type;
}
