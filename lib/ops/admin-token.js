'use strict';

const crypto = require('node:crypto');
const { fail } = require('./admin-replies');

// The token's check, when there is a token: 401 without it or with another.
function refuseWithoutToken(admin, request, needs) {
  if (admin.tokenDigest === null) return null;
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
  if (match === null) {
    return fail(401, `${needs} the admin token: send "Authorization: Bearer <token>"`,
      { 'WWW-Authenticate': 'Bearer realm="lila"' });
  }
  // Digests have equal lengths: the comparison tells nothing about the token's.
  if (!crypto.timingSafeEqual(sha256(match[1]), admin.tokenDigest)) {
    return fail(401, 'the admin token is wrong', { 'WWW-Authenticate': 'Bearer realm="lila", error="invalid_token"' });
  }
  return null;
}

// What the token is kept as: its digest, compared in constant time.
function sha256(text) {
  return crypto.createHash('sha256').update(text).digest();
}

module.exports = { refuseWithoutToken, sha256 };
