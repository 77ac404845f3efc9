'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { precompressedSiblings, precompressedSiblingsSync, chooseSibling } = require('../lib/files/precompressed');
const { resolveFile } = require('../lib/files/resolve');
const { negotiate, CODINGS } = require('../lib/http/compression/rules');

const ALL = [{ coding: 'br' }, { coding: 'zstd' }, { coding: 'gzip' }];
const only = (...codings) => ALL.filter(({ coding }) => codings.includes(coding));

describe('files: chooseSibling', () => {
  // [Accept-Encoding, siblings there, coding sent (null: the file as it is)]
  const table = [
    [undefined, ALL, null],
    ['', ALL, null],
    ['gzip, deflate, br, zstd', ALL, 'br'],
    ['gzip, deflate, br, zstd', only('zstd', 'gzip'), 'zstd'],
    ['gzip, deflate, br', only('zstd', 'gzip'), 'gzip'],
    ['gzip', only('br'), null],
    ['br;q=0.5, gzip', ALL, 'gzip'],
    ['br;q=1, gzip;q=0.5', only('gzip'), 'gzip'],
    ['zstd;q=0.9, br;q=0.8', ALL, 'zstd'],
    ['x-gzip', ALL, 'gzip'],
    ['GZIP', ALL, 'gzip'],
    ['br;q=0, gzip;q=0', ALL, null],
    ['*', ALL, 'br'],
    ['*;q=0.5, br;q=0', ALL, 'zstd'],
    ['*;q=0', ALL, null],
    ['identity', ALL, null],
    // identity weighed: above a coding, it wins; refused, any coding there is taken
    ['gzip;q=0.5, identity', ALL, null],
    ['gzip;q=0.5, identity;q=0.5', ALL, 'gzip'],
    ['gzip;q=0.001, identity;q=0', only('gzip'), 'gzip'],
    ['gzip;q=0.001', only('gzip'), 'gzip'],
    ['gzip, identity;q=0', only('br'), null],
    ['*;q=0.1, identity;q=0.5', ALL, null],
    ['deflate, compress', ALL, null],
    ['br;q=garbage, gzip;q=0.1', ALL, 'gzip'],
    ['gzip', [], null]
  ];
  for (const [accept, siblings, coding] of table) {
    it(`sends ${coding === null ? 'the file itself' : coding} to ${JSON.stringify(accept)} with ${siblings.map((s) => s.coding).join(', ') || 'no sibling'}`, () => {
      const chosen = chooseSibling(accept, siblings);
      assert.equal(chosen === null ? null : chosen.coding, coding);
    });
  }

  it('hands back the sibling itself', () => {
    const siblings = [{ coding: 'gzip', file: '/x.gz' }];
    assert.equal(chooseSibling('gzip', siblings), siblings[0]);
  });
});

describe('http/compression negotiate, with the codings offered', () => {
  it('answers --compress as before when no list is given', () => {
    assert.equal(negotiate('gzip, br'), 'br');
    assert.equal(negotiate('gzip;q=0.5, identity'), 'gzip');
    assert.equal(negotiate('identity'), null);
    assert.ok(CODINGS.includes(negotiate('*')));
  });

  it('picks among the codings offered, in their order on equal weights, identity included', () => {
    assert.equal(negotiate('gzip, br', ['gzip', 'br']), 'gzip');
    assert.equal(negotiate('gzip, br', ['zstd']), null);
    assert.equal(negotiate('gzip;q=0.5, identity', ['gzip', 'identity']), 'identity');
    assert.equal(negotiate('gzip', ['gzip', 'identity']), 'gzip');
    assert.equal(negotiate('br', ['gzip', 'identity']), 'identity');
    assert.equal(negotiate('br, *;q=0', ['gzip', 'identity']), null);
    // The last answer remembered for --compress is not another list's.
    assert.equal(negotiate('zstd, gzip', ['gzip']), 'gzip');
    assert.equal(negotiate('zstd, gzip'), CODINGS.includes('zstd') ? 'zstd' : 'gzip');
  });
});

describe('files: precompressedSiblings', () => {
  let root;

  before(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'lila-precompressed-')));
    fs.writeFileSync(path.join(root, 'app.js'), 'js');
    fs.writeFileSync(path.join(root, 'app.js.br'), 'brotli');
    fs.writeFileSync(path.join(root, 'app.js.gz'), 'gzipped');
    fs.symlinkSync('/etc/passwd', path.join(root, 'app.js.zst'));
    fs.writeFileSync(path.join(root, 'style.css'), 'css');
    fs.mkdirSync(path.join(root, 'style.css.gz'));
    fs.writeFileSync(path.join(root, 'real.js.gz'), 'real');
    fs.symlinkSync('real.js.gz', path.join(root, 'alias.js.gz'));
    fs.writeFileSync(path.join(root, 'alias.js'), 'alias');
  });

  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('finds the siblings there, br then zstd then gzip, each a regular file under the root', async () => {
    const found = await resolveFile(root, '/app.js');
    const siblings = await precompressedSiblings(found, root);

    assert.deepEqual(siblings.map(({ coding, file, path: p }) => [coding, file, p]), [
      ['br', path.join(root, 'app.js.br'), path.join(root, 'app.js.br')],
      ['gzip', path.join(root, 'app.js.gz'), path.join(root, 'app.js.gz')]
    ]);
    assert.equal(siblings[0].stat.size, 'brotli'.length);
    assert.deepEqual(precompressedSiblingsSync(found, root).map(({ coding, file }) => [coding, file]), siblings.map(({ coding, file }) => [coding, file]));
  });

  it('takes no directory for a sibling, and follows a link that stays under the root', async () => {
    assert.deepEqual(await precompressedSiblings(await resolveFile(root, '/style.css'), root), []);
    const [gzip] = await precompressedSiblings(await resolveFile(root, '/alias.js'), root);
    assert.deepEqual([gzip.coding, gzip.file, gzip.path], ['gzip', path.join(root, 'real.js.gz'), path.join(root, 'alias.js.gz')]);
  });
});
