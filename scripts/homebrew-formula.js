#!/usr/bin/env node
'use strict';

// Writes packaging/homebrew/lila.rb: the Homebrew formula that installs the npm tarball of the
// version in package.json, with that tarball's sha256, computed here from the bytes `npm pack`
// makes, never typed by hand. npm packs deterministically (every entry's mtime is npm's fixed
// date, modes and order normalised), so the same tree gives the same tarball on every machine
// and Node version, and `npm publish` of that tarball serves exactly these bytes.
//
// Usage: node scripts/homebrew-formula.js [tarball]   (`npm run formula`)
//   without a tarball, runs `npm pack` into a temporary directory and removes it afterwards;
//   test/install.test.js fails while the formula's sha256 is not that of the current tree.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const FORMULA = path.join(ROOT, 'packaging', 'homebrew', 'lila.rb');

/**
 * The formula's text for a version of the package and the sha256 of its tarball.
 *
 * @param {{name: string, version: string, license: string, homepage: string, sha256: string}} release
 *   the package's name, version, license and homepage (package.json's), and the tarball's sha256
 * @returns {string}
 */
function formulaText({ name, version, license, homepage, sha256 }) {
  return `# Homebrew formula for lila: installs the tarball of ${name} ${version} from the npm registry.
#
# Written by scripts/homebrew-formula.js (npm run formula) from the tarball \`npm pack\` makes of
# this tree: do not edit it by hand. Releasing is publishing that same tarball:
#   npm run formula && npm test && npm publish
class Lila < Formula
  desc "Tiny zero-dependency load balancer for TCP and HTTP backends"
  homepage "${homepage}"
  url "${tarballUrl(name, version)}"
  sha256 "${sha256}"
  license "${license}"

  depends_on "node"

  def install
    system "npm", "install", *std_npm_args
    bin.install_symlink libexec.glob("bin/*")
  end

  test do
    assert_equal version.to_s, shell_output("#{bin}/lila --version").strip
    assert_match "needs a port", shell_output("#{bin}/lila round-robin localhost 2>&1", 2)
  end
end
`;
}

/**
 * Where the npm registry serves a version's tarball.
 *
 * @param {string} name the package's name (unscoped)
 * @param {string} version
 * @returns {string}
 */
function tarballUrl(name, version) {
  return `https://registry.npmjs.org/${name}/-/${name}-${version}.tgz`;
}

/**
 * Runs `npm pack` on the repository into a new temporary directory.
 *
 * @param {string} [root] the repository
 * @returns {{file: string, directory: string}} the tarball, and the directory to remove
 */
function pack(root = ROOT) {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-pack-'));
  const output = execFileSync('npm', ['pack', '--json', '--pack-destination', directory], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe']
  });
  const [summary] = JSON.parse(output);
  return { file: path.join(directory, summary.filename), directory };
}

/**
 * The formula for a tarball of this package.
 *
 * @param {string} tarball its path
 * @param {string} [root] the repository, whose package.json names the release
 * @returns {string}
 */
function formulaFor(tarball, root = ROOT) {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const sha256 = crypto.createHash('sha256').update(fs.readFileSync(tarball)).digest('hex');
  return formulaText({ name: pkg.name, version: pkg.version, license: pkg.license, homepage: repositoryUrl(pkg), sha256 });
}

/**
 * The repository's web address, from package.json's `repository`
 * (`git+https://github.com/o/r.git` → `https://github.com/o/r`).
 *
 * @param {{repository: string | {url: string}}} pkg package.json's content
 * @returns {string}
 */
function repositoryUrl(pkg) {
  const url = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository.url;
  return url.replace(/^git\+/, '').replace(/\.git$/, '');
}

module.exports = { formulaText, formulaFor, tarballUrl, repositoryUrl, pack, FORMULA };

if (require.main === module) main(process.argv.slice(2));

function main(args) {
  let packed = null;
  try {
    if (args.length > 1) throw new Error('give at most one tarball');
    const tarball = args.length === 1 ? path.resolve(args[0]) : (packed = pack()).file;
    const text = formulaFor(tarball);
    fs.writeFileSync(FORMULA, text);
    const sha256 = /^\s*sha256 "([0-9a-f]{64})"$/m.exec(text)[1];
    process.stdout.write(`${path.relative(ROOT, FORMULA)}: ${path.basename(tarball)}, sha256 ${sha256}\n`);
  } catch (err) {
    process.stderr.write(`homebrew-formula: ${err.stderr || err.message}\n`);
    process.exitCode = 1;
  } finally {
    if (packed !== null) fs.rmSync(packed.directory, { recursive: true, force: true });
  }
}
