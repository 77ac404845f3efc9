'use strict';

const { getJson } = require('./fetch-json');

// An OpenID provider's metadata is a few kilobytes.
const MAX_METADATA = 64 * 1024;

/**
 * An OpenID provider's metadata (OpenID Connect Discovery 1.0 §4): GET
 * `<issuer>/.well-known/openid-configuration`, whose `issuer` must be the
 * issuer asked exactly (§4.3: a document that names another is not taken)
 * and whose `jwks_uri` must be an http(s) URL. The whole document is given,
 * for what else a client of the provider reads of it (its endpoints).
 *
 * @param {string} issuer as configured (a trailing `/` is not doubled)
 * @param {number} timeout ms for the exchange
 * @returns {Promise<{metadata: Record<string, unknown>, jwksUri: URL, maxAge: number}>}
 * @throws {Error} what went wrong, to show after the document's URL
 */
async function discover(issuer, timeout) {
  const { json, maxAge } = await getJson(metadataUrl(issuer), { timeout, maxBody: MAX_METADATA });
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('answered what is not a JSON object');
  if (json.issuer !== issuer) throw new Error(`names issuer ${JSON.stringify(json.issuer)}, not ${JSON.stringify(issuer)}`);
  let jwksUri;
  try {
    jwksUri = new URL(json.jwks_uri);
  } catch {
    jwksUri = null;
  }
  if (jwksUri === null || (jwksUri.protocol !== 'https:' && jwksUri.protocol !== 'http:')) throw new Error('names no http(s) jwks_uri');
  return { metadata: json, jwksUri, maxAge };
}

/**
 * @param {string} issuer
 * @returns {URL} where its metadata is
 */
function metadataUrl(issuer) {
  return new URL(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`);
}

module.exports = { discover, metadataUrl };
