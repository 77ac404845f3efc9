'use strict';

const assert = require('node:assert/strict');
const { listingHtml, escapeHtml } = require('../lib/files/listing');

const entries = [
  { name: 'zeta.txt', directory: false, size: 12, mtimeMs: Date.UTC(2024, 0, 2, 3, 4, 5) },
  { name: 'Alpha', directory: true, size: 4096, mtimeMs: Date.UTC(2024, 0, 1) },
  { name: 'beta.bin', directory: false, size: 3 * 1024 * 1024 + 1, mtimeMs: 0 },
  { name: '<img src=x onerror=alert(1)>', directory: false, size: 1, mtimeMs: 0 },
  { name: 'a b#?&%.txt', directory: false, size: 2048, mtimeMs: 0 },
  { name: 'ünï', directory: true, size: 0, mtimeMs: 0 },
  { name: '.env', directory: false, size: 9, mtimeMs: 0 },
  { name: '.git', directory: true, size: 0, mtimeMs: 0 }
];

function links(html) {
  return [...html.matchAll(/<a href="([^"]*)">([^<]*)<\/a>/g)].map(([, href, text]) => ({ href, text }));
}

describe('files: listingHtml', () => {
  const html = listingHtml('/docs/%C3%BC%3Cb%3E/', entries);

  it('is an HTML5 page: doctype, language, charset, one title and one h1 saying the decoded path, escaped', () => {
    assert.ok(html.startsWith('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">'));
    assert.ok(html.endsWith('</body>\n</html>\n'));
    assert.match(html, /<title>Index of \/docs\/ü&lt;b&gt;\/<\/title>/);
    assert.match(html, /<h1>Index of \/docs\/ü&lt;b&gt;\/<\/h1>/);
    for (const tag of ['html', 'head', 'body', 'table', 'thead', 'tbody', 'title', 'h1', 'style']) {
      assert.equal(html.split(`<${tag}`).length, html.split(`</${tag}>`).length, `<${tag}> closed`);
    }
    assert.equal(html.split('<tr>').length, html.split('</tr>').length);
  });

  it('links ../, then directories, then files, each by name in code point order, dotfiles left out', () => {
    assert.deepEqual(links(html).map(({ href }) => href), [
      '../', 'Alpha/', '%C3%BCn%C3%AF/', '%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E', 'a%20b%23%3F%26%25.txt', 'beta.bin', 'zeta.txt'
    ]);
    assert.deepEqual(links(html).map(({ text }) => text), [
      '../', 'Alpha/', 'ünï/', '&lt;img src=x onerror=alert(1)&gt;', 'a b#?&amp;%.txt', 'beta.bin', 'zeta.txt'
    ]);
    assert.doesNotMatch(html, /\.env|\.git/);
  });

  it('makes each href a relative link that decodes back to the name (no scheme, no query, no fragment)', () => {
    const names = links(html).slice(1).map(({ href }) => decodeURIComponent(href.replace(/\/$/, '')));

    assert.deepEqual(names, ['Alpha', 'ünï', '<img src=x onerror=alert(1)>', 'a b#?&%.txt', 'beta.bin', 'zeta.txt']);
    for (const { href } of links(html)) assert.doesNotMatch(href, /[:?#&<>" ]/);
  });

  it('shows a file\'s size and every entry\'s modification time, UTC', () => {
    assert.match(html, /zeta\.txt<\/a><\/td><td class="size">12 B<\/td><td><time datetime="2024-01-02T03:04:05.000Z">2024-01-02 03:04<\/time>/);
    assert.match(html, /beta\.bin<\/a><\/td><td class="size">3\.0 MiB<\/td>/);
    assert.match(html, /a b#\?&amp;%\.txt<\/a><\/td><td class="size">2\.0 KiB<\/td>/);
    assert.match(html, /Alpha\/<\/a><\/td><td class="size"><\/td><td><time datetime="2024-01-01T00:00:00\.000Z">/);
  });

  it('has no link to ../ at the root, and shows an empty directory as a page without rows', () => {
    const root = listingHtml('/', []);

    assert.deepEqual(links(root), []);
    assert.match(root, /<title>Index of \/<\/title>/);
  });

  it('shows a path that is no UTF-8 as it came, escaped', () => {
    assert.match(listingHtml('/%ff%3C/', []), /<title>Index of \/%ff%3C\/<\/title>/);
  });

  it('escapes what HTML reads: & < > " \'', () => {
    assert.equal(escapeHtml('&<>"\'x'), '&amp;&lt;&gt;&quot;&#39;x');
  });
});
