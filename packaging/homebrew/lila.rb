# Homebrew formula for lila, installed from the tarball published to npm.
#
# Releasing: url and sha256 change together, and sha256 is that of the exact tarball published:
#   npm pack                                  # lila-lb-<version>.tgz
#   shasum -a 256 lila-lb-<version>.tgz       # goes into sha256 below, with <version> in url
#   LILA_RELEASE=1 npm test                   # checks both against package.json and that tarball
#   npm publish lila-lb-<version>.tgz         # publishes those same bytes
class Lila < Formula
  desc "Tiny zero-dependency load balancer for TCP and HTTP backends"
  homepage "https://www.npmjs.com/package/lila-lb"
  url "https://registry.npmjs.org/lila-lb/-/lila-lb-2.0.0.tgz"
  sha256 "3e45dd00a1dcbfcc4f9d53e409bd7961f3af0a2730cbb34919605bd6632c3db1"
  license "MIT"

  depends_on "node"

  def install
    system "npm", "install", *std_npm_args
    bin.install_symlink libexec.glob("bin/*")
  end

  test do
    assert_equal version.to_s, shell_output("#{bin}/lila --version").strip
    assert_match "lila: no mode given", shell_output("#{bin}/lila 2>&1", 2)
  end
end
