'use strict';

const assert = require('node:assert/strict');
const { contentTypeOf } = require('../lib/files/mime');

describe('files: contentTypeOf', () => {
  const table = [
    ['index.html', 'text/html; charset=utf-8'],
    ['old.htm', 'text/html; charset=utf-8'],
    ['site.css', 'text/css; charset=utf-8'],
    ['app.js', 'text/javascript; charset=utf-8'],
    ['module.mjs', 'text/javascript; charset=utf-8'],
    ['common.cjs', 'text/javascript; charset=utf-8'],
    ['data.json', 'application/json; charset=utf-8'],
    ['app.js.map', 'application/json; charset=utf-8'],
    ['site.webmanifest', 'application/manifest+json; charset=utf-8'],
    ['ld.jsonld', 'application/ld+json; charset=utf-8'],
    ['logo.svg', 'image/svg+xml; charset=utf-8'],
    ['feed.xml', 'application/xml; charset=utf-8'],
    ['feed.atom', 'application/atom+xml; charset=utf-8'],
    ['notes.txt', 'text/plain; charset=utf-8'],
    ['README.md', 'text/markdown; charset=utf-8'],
    ['table.csv', 'text/csv; charset=utf-8'],
    ['event.ics', 'text/calendar; charset=utf-8'],
    ['subs.vtt', 'text/vtt; charset=utf-8'],
    ['a.png', 'image/png'],
    ['a.apng', 'image/apng'],
    ['a.jpg', 'image/jpeg'],
    ['a.jpeg', 'image/jpeg'],
    ['a.gif', 'image/gif'],
    ['a.webp', 'image/webp'],
    ['a.avif', 'image/avif'],
    ['a.jxl', 'image/jxl'],
    ['a.heic', 'image/heic'],
    ['favicon.ico', 'image/x-icon'],
    ['a.bmp', 'image/bmp'],
    ['f.woff', 'font/woff'],
    ['f.woff2', 'font/woff2'],
    ['f.ttf', 'font/ttf'],
    ['f.otf', 'font/otf'],
    ['f.eot', 'application/vnd.ms-fontobject'],
    ['m.wasm', 'application/wasm'],
    ['doc.pdf', 'application/pdf'],
    ['v.mp4', 'video/mp4'],
    ['v.webm', 'video/webm'],
    ['v.ogv', 'video/ogg'],
    ['a.ogg', 'audio/ogg'],
    ['a.oga', 'audio/ogg'],
    ['a.mp3', 'audio/mpeg'],
    ['a.wav', 'audio/wav'],
    ['a.flac', 'audio/flac'],
    ['a.aac', 'audio/aac'],
    ['a.m4a', 'audio/mp4'],
    ['x.zip', 'application/zip'],
    ['x.tar.gz', 'application/gzip'],
    ['x.tar', 'application/x-tar'],
    ['x.7z', 'application/x-7z-compressed'],
    ['c.yaml', 'application/yaml'],
    ['c.yml', 'application/yaml'],
    ['c.toml', 'application/toml'],
    ['book.epub', 'application/epub+zip'],
    ['live.m3u8', 'application/vnd.apple.mpegurl'],
    ['seg.ts', 'video/mp2t']
  ];
  for (const [name, type] of table) {
    it(`gives ${name} ${type}`, () => assert.equal(contentTypeOf(name), type));
  }

  it('reads the extension case-insensitively, from a name or a path', () => {
    assert.equal(contentTypeOf('INDEX.HTML'), 'text/html; charset=utf-8');
    assert.equal(contentTypeOf('Photo.JPG'), 'image/jpeg');
    assert.equal(contentTypeOf('/srv/www/assets/app.Js'), 'text/javascript; charset=utf-8');
    assert.equal(contentTypeOf('C:\\www\\a.css'), 'text/css; charset=utf-8');
  });

  it('gives application/octet-stream to no extension, an unknown one, a dotfile, a dot in a directory only', () => {
    for (const name of ['README', 'x.unknown', 'x.', '.env', '.gitignore', '/srv/a.d/file', 'a.b\\c', '', 'x.exe', 'x.iso']) {
      assert.equal(contentTypeOf(name), 'application/octet-stream', name);
    }
  });

  it('reads no extension from the table\'s object prototype', () => {
    for (const name of ['x.constructor', 'x.__proto__', 'x.toString', 'x.hasOwnProperty']) {
      assert.equal(contentTypeOf(name), 'application/octet-stream', name);
    }
  });
});
