# Homebrew formula for lila: installs the tarball of lila-lb 2.0.0 from the npm registry.
#
# Written by scripts/homebrew-formula.js (npm run formula) from the tarball `npm pack` makes of
# this tree: do not edit it by hand. Releasing is publishing that same tarball:
#   npm run formula && npm test && npm publish
class Lila < Formula
  desc "Tiny zero-dependency load balancer for TCP and HTTP backends"
  homepage "https://github.com/lila-lb/lila"
  url "https://registry.npmjs.org/lila-lb/-/lila-lb-2.0.0.tgz"
  sha256 "c81eb3e7a9d03c46ea43245db381eae7f7946a6c88eeb04b510caf82f2150528"
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
