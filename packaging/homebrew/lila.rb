# Homebrew formula for lila: installs the tarball of lila-lb 2.0.0 from the npm registry.
#
# Written by scripts/homebrew-formula.js (npm run formula) from the tarball `npm pack` makes of
# this tree: do not edit it by hand. Releasing is publishing that same tarball:
#   npm run formula && npm test && npm publish
class Lila < Formula
  desc "Tiny zero-dependency load balancer for TCP and HTTP backends"
  homepage "https://github.com/lila-lb/lila"
  url "https://registry.npmjs.org/lila-lb/-/lila-lb-2.0.0.tgz"
  sha256 "b46a81d24d3f2bb5b8c770408d773d19e91d66fc6e0074de3a3b157946be6fb8"
  license "MIT"

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
