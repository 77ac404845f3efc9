'use strict';

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const { parseBcrypt, bcrypt, bcryptString } = require('../lib/actions/bcrypt');
const { HashWorkers, MAX_WAITING } = require('../lib/actions/hash-workers');
const { parseHash, verifyPassword, decoyOf, hashPassword } = require('../lib/actions/password-hash');

// OpenBSD's bcrypt vectors, as jBCrypt's TestBCrypt.java and bcrypt-ruby carry them.
const OPENBSD = [
  ['', '$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.'],
  ['', '$2a$08$HqWuK6/Ng6sg9gQzbLrgb.Tl.ZHfXLhvt/SgVyWhQqgqcZ7ZuUtye'],
  ['', '$2a$10$k1wbIrmNyFAPwPVPSVa/zecw2BCEnBwVS2GbrmgzxFUOqW9dk4TCW'],
  ['', '$2a$12$k42ZFHFWqBp3vWli.nIn8uYyIkbvYRvodzbfbK18SSsY.CsIQPlxO'],
  ['a', '$2a$06$m0CrhHm10qJ3lXRY.5zDGO3rS2KdeeWLuGmsfGlMfOxih58VYVfxe'],
  ['a', '$2a$08$cfcvVd2aQ8CMvoMpP2EBfeodLEkkFJ9umNEfPD18.hUF62qqlC/V.'],
  ['a', '$2a$10$k87L/MF28Q673VKh8/cPi.SUl7MU/rWuSiIDDFayrKk/1tBsSQu4u'],
  ['abc', '$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i'],
  ['abc', '$2a$08$Ro0CUfOqk6cXEKf3dyaM7OhSCvnwM9s4wIX9JeLapehKK5YdLxKcm'],
  ['abc', '$2a$10$WvvTPHKwdBJ3uk0Z37EMR.hLA2W6N9AEBhEgrAOljy2Ae5MtaSIUi'],
  ['abcdefghijklmnopqrstuvwxyz', '$2a$06$.rCVZVOThsIa97pEDOxvGuRRgzG64bvtJ0938xuqzv18d3ZpQhstC'],
  ['abcdefghijklmnopqrstuvwxyz', '$2a$08$aTsUwsyowQuzRrDqFflhgekJ8d9/7Z3GV3UcgvzQW3J5zMyrTvlz.'],
  ['abcdefghijklmnopqrstuvwxyz', '$2a$10$fVH8e28OQRj9tqiDXs1e1uxpsjN0c7II7YPKXua2NAKYvM6iQk7dq'],
  ['~!@#$%^&*()      ~!@#$%^&*()PNBFRD', '$2a$06$fPIsBO8qRqkjj273rfaOI.HtSV9jLDpTbZn782DC6/t7qT67P6FfO'],
  ['~!@#$%^&*()      ~!@#$%^&*()PNBFRD', '$2a$08$Eq2r4G/76Wv39MzSX262huzPz612MZiYHVUJe/OcOql2jo4.9UxTW'],
  ['~!@#$%^&*()      ~!@#$%^&*()PNBFRD', '$2a$10$LgfYWkbzEvQ4JakH7rOvHe0y8pHKF9OaFgwUZ2q7W2FFZmZzJYlfS']
];

// crypt_blowfish's own vectors (wrapper.c's tests, as PHP and libxcrypt carry them): 8-bit keys,
// $2y$ against $2a$'s safety tweak, and keys longer than 72 bytes. Keys are bytes (latin1 here).
const CRYPT_BLOWFISH = [
  ['U*U', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW'],
  ['U*U*', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK'],
  ['U*U*U', '$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a'],
  ['0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789chars after 72 are ignored',
    '$2a$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui'],
  ['\xff\xff\xa3', '$2y$05$/OK.fbVrR/bpIqNJ5ianF.CE5elHaaO4EbggVDjb8P19RukzXSM3e'],
  ['\xff\xff\xa3', '$2a$05$/OK.fbVrR/bpIqNJ5ianF.nqd1wy.pTMdcvrRWxyiGL2eMz.2a85.'],
  ['\xa3', '$2y$05$/OK.fbVrR/bpIqNJ5ianF.Sa7shbm4.OzKpvFnX1pQLmQW96oUlCq'],
  ['\xa3', '$2a$05$/OK.fbVrR/bpIqNJ5ianF.Sa7shbm4.OzKpvFnX1pQLmQW96oUlCq'],
  ['\xff\xa334\xff\xff\xff\xa3345', '$2y$05$/OK.fbVrR/bpIqNJ5ianF.o./n25XVfn6oAPaUvHe.Csk4zRfsYPi'],
  ['\xff\xa334\xff\xff\xff\xa3345', '$2a$05$/OK.fbVrR/bpIqNJ5ianF.ZC1JEJ8Z4gPfpe1JOr/oyPXTWl9EFd.'],
  ['\xff\xa3345', '$2y$05$/OK.fbVrR/bpIqNJ5ianF.nRht2l/HRhr6zmCp9vYUvvsqynflf9e'],
  ['\xff\xa3345', '$2a$05$/OK.fbVrR/bpIqNJ5ianF.nRht2l/HRhr6zmCp9vYUvvsqynflf9e'],
  ['\xa3ab', '$2a$05$/OK.fbVrR/bpIqNJ5ianF.6IflQkJytoRVc1yuaNtHfiuq.FRlSIS'],
  ['\xa3ab', '$2y$05$/OK.fbVrR/bpIqNJ5ianF.6IflQkJytoRVc1yuaNtHfiuq.FRlSIS'],
  [`${'\xaa'.repeat(72)}chars after 72 are ignored as usual`, '$2a$05$/OK.fbVrR/bpIqNJ5ianF.swQOIzjOiJ9GHEPuhEkvqrUyvWhEMx6'],
  ['\xaa\x55'.repeat(36), '$2a$05$/OK.fbVrR/bpIqNJ5ianF.R9xrDjiycxMbQE2bp.vgqlYpW5wx2yy'],
  ['\x55\xaa\xff'.repeat(24), '$2a$05$/OK.fbVrR/bpIqNJ5ianF.9tQZzcJfm3uj2NvJ/n5xkhpqLrMpWCe'],
  ['', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.7uG0VCzI2bS7j6ymqJi9CdcdxiRTWNy']
];

/** @returns {boolean} whether Apache's htpasswd can be run */
function hasHtpasswd() {
  try {
    execFileSync('htpasswd', ['-nbB', '-C', '4', 'u', 'p'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

describe('bcrypt', () => {
  describe('the vectors of OpenBSD (jBCrypt\'s suite)', () => {
    for (const [password, hash] of OPENBSD) {
      it(`hashes ${JSON.stringify(password)} to ${hash}`, () => {
        assert.equal(bcryptString(Buffer.from(password), parseBcrypt(hash)), hash);
      });
    }
  });

  describe("the vectors of crypt_blowfish (8-bit keys, $2a$'s safety tweak, 72 bytes)", () => {
    for (const [key, hash] of CRYPT_BLOWFISH) {
      it(`hashes ${JSON.stringify(key).slice(0, 40)} to ${hash}`, () => {
        assert.equal(bcryptString(Buffer.from(key, 'latin1'), parseBcrypt(hash)), hash);
      });
    }
  });

  describe('hashes made by htpasswd -B (Apache)', () => {
    const passwords = ['wonder land', 'pässwörd ✓', 'x'.repeat(80), ':colons:in:it:'];
    for (const password of passwords) {
      it(`checks ${JSON.stringify(password).slice(0, 30)} right, and a wrong one wrong`, function () {
        if (!hasHtpasswd()) {
          if (process.env.LILA_REQUIRE_HTPASSWD === '1') assert.fail('htpasswd (apache2-utils) is required');
          this.skip();
        }
        const line = execFileSync('htpasswd', ['-nbB', '-C', '5', 'user', password], { encoding: 'utf8' }).trim();
        const setting = parseBcrypt(line.slice('user:'.length));

        assert.equal(setting.minor, 'y');
        assert.equal(bcryptString(Buffer.from(password), setting), line.slice('user:'.length));
        assert.notDeepEqual(bcrypt(Buffer.from(`!${password}`), setting), setting.hash);
      });
    }

    it('ignores what follows 72 bytes, as htpasswd does', function () {
      if (!hasHtpasswd()) this.skip();
      const line = execFileSync('htpasswd', ['-nbB', '-C', '4', 'user', `${'y'.repeat(72)}one`], { encoding: 'utf8' }).trim();
      const setting = parseBcrypt(line.slice('user:'.length));

      assert.deepEqual(bcrypt(Buffer.from(`${'y'.repeat(72)}two`), setting), setting.hash);
    });
  });

  describe('parseBcrypt', () => {
    it('reads the minor version, cost, salt and hash', () => {
      const setting = parseBcrypt('$2b$10$k87L/MF28Q673VKh8/cPi.SUl7MU/rWuSiIDDFayrKk/1tBsSQu4u');

      assert.equal(setting.minor, 'b');
      assert.equal(setting.cost, 10);
      assert.equal(setting.salt.length, 16);
      assert.equal(setting.hash.length, 23);
    });

    it('refuses what is not one: other versions, costs out of 4 to 31, other lengths or characters', () => {
      for (const text of [
        '$2x$05$/OK.fbVrR/bpIqNJ5ianF.CE5elHaaO4EbggVDjb8P19RukzXSM3e',
        '$2a$03$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW',
        '$2a$32$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW',
        '$2a$5$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW',
        '$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOe',
        '$2a$05$CCCCCCCCCCCCCCCCCCCCC!E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW'
      ]) {
        assert.equal(parseBcrypt(text), null, text);
      }
    });
  });
});

describe('password hashes', () => {
  it('checks bcrypt on a thread as the main thread computes it', async () => {
    const setting = parseHash('$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i');

    assert.equal(await verifyPassword(setting, Buffer.from('abc')), true);
    assert.equal(await verifyPassword(setting, Buffer.from('abd')), false);
  });

  it("checks lila's scrypt hashes: its own, and a wrong password", async () => {
    const hash = await hashPassword('correct horse');
    const parsed = parseHash(hash);

    assert.match(hash, /^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    assert.equal(await verifyPassword(parsed, Buffer.from('correct horse')), true);
    assert.equal(await verifyPassword(parsed, Buffer.from('correct horsE')), false);
  });

  it('makes a decoy of the same kind and cost that matches nothing', async () => {
    const hash = parseHash('$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i');
    const decoy = decoyOf(hash);

    assert.equal(decoy.cost, 6);
    assert.notDeepEqual(decoy.salt, hash.salt);
    assert.equal(await verifyPassword(decoy, Buffer.from('abc')), false);
  });

  it('refuses the hashes lila does not take, saying what it takes', () => {
    const kinds = {
      '$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/': 'an MD5 (apr1) hash',
      '{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=': 'a SHA-1 hash',
      '$6$salt$hash': 'a SHA-512-crypt hash',
      'rqXexS6ZhobKA': 'a DES crypt hash',
      'secret': 'not a password hash lila knows',
      '$2y$18$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW': 'bcrypt cost 18 would take too long',
      '$scrypt$ln=30,r=8,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2g': 'out of bounds'
    };
    for (const [text, says] of Object.entries(kinds)) {
      assert.throws(() => parseHash(text), (err) => err.code === 'LILA_ERR_INVALID_OPTION' && err.message.includes(says), text);
    }
    assert.throws(() => parseHash('$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/'), /lila takes bcrypt \(\$2y\$, \$2b\$, \$2a\$: htpasswd -B\) and scrypt/);
  });

  it(`refuses at once a check past ${MAX_WAITING} waiting for the threads (503)`, async () => {
    const workers = new HashWorkers(1);
    const setting = parseBcrypt('$2a$04$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW');
    const job = { kind: 'bcrypt', password: Buffer.from('U*U'), minor: 'a', salt: setting.salt, cost: 4 };
    const accepted = Array.from({ length: MAX_WAITING + 1 }, () => workers.hash(job));

    await assert.rejects(workers.hash(job), (err) => err.code === 'LILA_ERR_RESOURCES' && err.status === 503 && err.retryAfter === 1);
    const hashes = await Promise.all(accepted);
    assert.deepEqual(hashes[MAX_WAITING], bcrypt(Buffer.from('U*U'), setting));
  });
});
