'use strict';

// What the JWT tests share: keys made with node:crypto, tokens signed as an identity provider
// signs them, a JWK Set served by a real http server, an echo backend, and lila in front.

const crypto = require('node:crypto');
const { startHttpBackend, startProxy } = require('./helpers');

// Each algorithm lila verifies, with the key that signs it and how node:crypto signs it.
const ALGORITHMS = {
  RS256: { type: 'rsa', options: { modulusLength: 2048 }, hash: 'sha256', sign: {} },
  RS384: { type: 'rsa', options: { modulusLength: 2048 }, hash: 'sha384', sign: {} },
  RS512: { type: 'rsa', options: { modulusLength: 2048 }, hash: 'sha512', sign: {} },
  PS256: { type: 'rsa', options: { modulusLength: 2048 }, hash: 'sha256', sign: { padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } },
  PS384: { type: 'rsa', options: { modulusLength: 2048 }, hash: 'sha384', sign: { padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 48 } },
  PS512: { type: 'rsa', options: { modulusLength: 2048 }, hash: 'sha512', sign: { padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 } },
  ES256: { type: 'ec', options: { namedCurve: 'P-256' }, hash: 'sha256', sign: { dsaEncoding: 'ieee-p1363' } },
  ES384: { type: 'ec', options: { namedCurve: 'P-384' }, hash: 'sha384', sign: { dsaEncoding: 'ieee-p1363' } },
  ES512: { type: 'ec', options: { namedCurve: 'P-521' }, hash: 'sha512', sign: { dsaEncoding: 'ieee-p1363' } },
  EdDSA: { type: 'ed25519', options: {}, hash: null, sign: {} }
};
// Keys by name, made once a process: an RSA key takes tens of milliseconds.
const made = new Map();

/**
 * A key pair, made with generateKeyPairSync, and its public JWK with this kid.
 *
 * @param {string} kid
 * @param {string} [alg] the algorithm it signs (RS256 by default); `ed448` for an Ed448 key
 * @returns {{kid: string, alg: string, privateKey: crypto.KeyObject, publicKey: crypto.KeyObject, jwk: object}}
 */
function keyOf(kid, alg = 'RS256') {
  const name = `${kid}/${alg}`;
  if (!made.has(name)) {
    const spec = alg === 'ed448' ? { type: 'ed448', options: {} } : ALGORITHMS[alg];
    const pair = crypto.generateKeyPairSync(spec.type, spec.options);
    made.set(name, { kid, alg: alg === 'ed448' ? 'EdDSA' : alg, ...pair, jwk: { ...pair.publicKey.export({ format: 'jwk' }), kid } });
  }
  return made.get(name);
}

/**
 * A JWT signed as an identity provider signs it (JWS compact serialization).
 *
 * @param {ReturnType<typeof keyOf>} key
 * @param {object} claims `exp` defaults to a minute from now; `null` leaves a claim out
 * @param {object} [header] over `{alg, kid, typ: 'JWT'}`
 * @returns {string}
 */
function signToken(key, claims = {}, header = {}) {
  const fullHeader = dropNulls({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header });
  const fullClaims = dropNulls({ sub: 'alice', exp: now() + 60, ...claims });
  const input = `${b64(fullHeader)}.${b64(fullClaims)}`;
  const spec = ALGORITHMS[fullHeader.alg] || ALGORITHMS[key.alg];
  const signature = crypto.sign(spec.hash, Buffer.from(input), { key: key.privateKey, ...spec.sign });
  return `${input}.${signature.toString('base64url')}`;
}

/** @returns {string} base64url of a string or of an object's JSON */
function b64(value) {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

/** @returns {number} seconds since the epoch */
function now() {
  return Math.floor(Date.now() / 1000);
}

/**
 * A JWK Set served over http by a real server: `keys` may change, `gets` counts its GETs, `cacheControl`
 * is sent when set, and `/.well-known/openid-configuration` names it as the issuer's `jwks_uri`.
 *
 * @param {object[]} jwks the public JWKs served
 * @returns {Promise<import('node:http').Server & {port: number, url: string, issuer: string, jwks: object[],
 *   gets: number, paths: string[], cacheControl: string | null}>}
 */
async function startJwksServer(jwks) {
  const server = await startHttpBackend('jwks', (req, res) => {
    req.resume();
    server.paths.push(req.url);
    if (req.url === '/.well-known/openid-configuration') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer: server.issuer, jwks_uri: server.url, authorization_endpoint: `${server.issuer}/authorize` }));
      return;
    }
    if (req.url !== '/jwks.json') {
      res.statusCode = 404;
      res.end();
      return;
    }
    server.gets++;
    if (server.cacheControl !== null) res.setHeader('cache-control', server.cacheControl);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: server.jwks }));
  });
  return Object.assign(server, {
    jwks, gets: 0, paths: [], cacheControl: null, url: `http://127.0.0.1:${server.port}/jwks.json`, issuer: `http://127.0.0.1:${server.port}`
  });
}

/**
 * A backend answering with the request it got, as JSON.
 *
 * @returns {ReturnType<typeof startHttpBackend>}
 */
function echoBackend() {
  return startHttpBackend('A', (req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ url: req.url, headers: req.headers, rawHeaders: req.rawHeaders }));
    });
  });
}

/**
 * lila in this process in front of an echo backend, with these route actions.
 *
 * @param {object} actions `jwtJwks`, ...
 * @param {{engine?: string, logger?: object}} [options]
 * @returns {Promise<{proxy: Awaited<ReturnType<typeof startProxy>>, backend: object}>}
 */
async function startJwtProxy(actions, options = {}) {
  const backend = await echoBackend();
  const proxy = await startProxy({ mode: 'round-robin', servers: [backend.address], engine: options.engine || 'fast', actions,
    ...(options.logger === undefined ? {} : { logger: options.logger }) });
  return { proxy, backend };
}

/** The values of a field in a raw header list, by name in any case, in order. */
function fieldValues(rawHeaders, name) {
  const values = [];
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i].toLowerCase() === name) values.push(rawHeaders[i + 1]);
  return values;
}

module.exports = { ALGORITHMS, keyOf, signToken, b64, now, startJwksServer, echoBackend, startJwtProxy, fieldValues };

function dropNulls(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== null));
}
