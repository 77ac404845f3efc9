'use strict';

const net = require('node:net');
const { LilaError, codes } = require('../errors');

const MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;
const MAPPED_HEX = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i;

/**
 * `--allow` and `--deny`: client addresses by CIDR block (IPv4 and IPv6,
 * a lone address being its own block). A client is refused when a `--deny`
 * block holds it, or when `--allow` is given and no block of it does: deny
 * wins, as in nginx when its deny comes first.
 *
 * The two families are apart, as in nginx: an IPv4 client (on a dual-stack
 * socket, ::ffff:a.b.c.d) is held by IPv4 blocks only, so `--deny ::/0` keeps
 * out IPv6 clients and no others; a block written IPv4-mapped
 * (::ffff:10.0.0.0/104) is the IPv4 block it maps.
 */
class AddressRules {
  /**
   * @param {string[] | undefined} allow comma-separated lists, as given
   * @param {string[] | undefined} deny
   * @param {string} where names the route, for messages
   * @returns {AddressRules | null} null when neither is given
   * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming a block that is not one
   */
  static from(allow, deny, where) {
    if (allow === undefined && deny === undefined) return null;
    return new AddressRules(
      allow === undefined ? null : blocksOf(allow, '--allow', where),
      deny === undefined ? null : blocksOf(deny, '--deny', where)
    );
  }

  /**
   * @param {Blocks | null} allow
   * @param {Blocks | null} deny
   */
  constructor(allow, deny) {
    this.allow = allow;
    this.deny = deny;
  }

  /**
   * @param {string | undefined} address the client's (after --accept-proxy)
   * @returns {boolean}
   */
  admits(address) {
    if (typeof address !== 'string') return false;
    // An IPv4 client on a dual-stack socket comes as ::ffff:a.b.c.d.
    const mapped = MAPPED.exec(address);
    const ip = mapped === null ? address : mapped[1];
    const family = net.isIPv4(ip) ? 'ipv4' : net.isIPv6(ip) ? 'ipv6' : null;
    if (family === null) return false;
    if (this.deny !== null && this.deny[family].check(ip, family)) return false;
    return this.allow === null || this.allow[family].check(ip, family);
  }
}

module.exports = AddressRules;

/**
 * @typedef {{ipv4: net.BlockList, ipv6: net.BlockList}} Blocks one list per
 *   family: net.BlockList alone would hold IPv4 clients in IPv6 blocks that
 *   cover ::ffff:0:0/96 (::/0 among them)
 */

function blocksOf(lists, option, where) {
  const blocks = { ipv4: new net.BlockList(), ipv6: new net.BlockList() };
  for (const list of lists) {
    for (const text of String(list).split(',')) {
      const block = text.trim();
      if (block === '') continue;
      const slash = block.indexOf('/');
      let address = slash === -1 ? block : block.slice(0, slash);
      let family = net.isIPv4(address) ? 'ipv4' : net.isIPv6(address) ? 'ipv6' : null;
      const most = family === 'ipv4' ? 32 : 128;
      const bitsText = slash === -1 ? String(most) : block.slice(slash + 1);
      let bits = Number(bitsText);
      if (family === null || !/^\d+$/.test(bitsText) || bits > most) {
        throw new LilaError(codes.INVALID_OPTION, `${where}: ${option} "${block}" is not a CIDR block (10.0.0.0/8, 2001:db8::/32, or an address)`);
      }
      const mapped = family === 'ipv6' && bits >= 96 ? MAPPED.exec(address) || MAPPED_HEX.exec(address) : null;
      if (mapped !== null) {
        address = mapped[2] === undefined ? mapped[1] : ipv4OfHex(mapped[1], mapped[2]);
        family = 'ipv4';
        bits -= 96;
      }
      blocks[family].addSubnet(address, bits, family);
    }
  }
  return blocks;
}

// ::ffff:a0b:c0d, as ::ffff:10.11.12.13 may also be written.
function ipv4OfHex(high, low) {
  const value = parseInt(high, 16) * 65536 + parseInt(low, 16);
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}
