'use strict';

const crypto = require('node:crypto');
const http = require('node:http');
const https = require('node:https');
const { exchange } = require('../net/http-exchange');
const { TokenVerifier } = require('./token-verifier');
const TokenError = require('./token-error');

/** The token endpoint's answer to a code is awaited this long. */
const CODE_EXCHANGE_MS = 5000;
// A token answer holds an ID token, an access token and maybe a refresh token, a UserInfo answer some claims: a few kilobytes.
const MAX_ANSWER = 64 * 1024;
const RANDOM_BYTES = 32;

/**
 * An OpenID Connect relying party (OpenID Connect Core 1.0 §3.1, the
 * authorization code flow) whose provider's metadata and keys are those of
 * a `KeySet` read from the issuer (`discovery.js`: read before lila serves,
 * and again with the keys). It makes the authorization request (PKCE S256,
 * RFC 7636; `state`, `nonce`), redeems a code at the token endpoint
 * (`client_secret_basic` or `client_secret_post` as the provider's metadata
 * offers, or a public client's `client_id` alone) and checks the ID token
 * with a `TokenVerifier` (its signature by the provider's keys, `iss`, the
 * client id in `aud`, `exp`), then its `nonce` and `azp`; the profile's claims
 * the ID token lacks are asked of the UserInfo endpoint. It keeps nothing
 * of a login: the caller holds what `authorization()` gives until the code
 * comes back.
 */
class OpenIdClient {
  /**
   * @param {import('./key-set').KeySet} keySet the issuer's (`{issuer}`): its metadata and keys
   * @param {{issuer: string, clientId: string, clientSecret: string | null, scopes: string[], leeway: number}} client
   *   `leeway` in ms, for `exp`
   */
  constructor(keySet, client) {
    this.keySet = keySet;
    this.issuer = client.issuer;
    this.clientId = client.clientId;
    this.clientSecret = client.clientSecret;
    this.scopes = client.scopes;
    this.verifier = new TokenVerifier(keySet, { issuer: client.issuer, audiences: [client.clientId], leeway: client.leeway });
  }

  /** @returns {Record<string, unknown> | null} the provider's metadata; null: not read yet */
  get metadata() {
    const metadata = this.keySet.metadata;
    return metadata !== null && typeof metadata.authorization_endpoint === 'string' && typeof metadata.token_endpoint === 'string'
      ? metadata : null;
  }

  /**
   * A wait for the provider's metadata, when it is not in hand.
   *
   * @returns {Promise<void> | null} resolves when a read ends, within the key set's request wait (2 s);
   *   null: no read may start now (one started less than 10 s ago)
   */
  whenDiscovered() {
    return this.keySet.whenRead();
  }

  /**
   * The authorization request a browser is sent to.
   *
   * @param {string} redirectUri where the provider sends the browser back (lila's `/oauth2/callback`)
   * @returns {{url: string, login: {state: string, nonce: string, verifier: string}}} what must come back with
   *   the code (`login`), for the caller to keep
   * @throws {Error} when the metadata is not in hand (`metadata` is null)
   */
  authorization(redirectUri) {
    const metadata = this.metadata;
    if (metadata === null) throw new Error('the provider\'s metadata is not read yet');
    const login = { state: randomText(), nonce: randomText(), verifier: randomText() };
    const url = new URL(metadata.authorization_endpoint);
    const challenge = crypto.createHash('sha256').update(login.verifier).digest('base64url');
    const parameters = {
      response_type: 'code', client_id: this.clientId, redirect_uri: redirectUri, scope: this.scopes.join(' '),
      state: login.state, nonce: login.nonce, code_challenge: challenge, code_challenge_method: 'S256'
    };
    for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
    return { url: url.href, login };
  }

  /**
   * The code the browser came back with, redeemed and its ID token checked.
   *
   * @param {string} code
   * @param {{nonce: string, verifier: string}} login what `authorization()` gave for it
   * @param {string} redirectUri the one of the authorization request
   * @returns {Promise<{claims: Record<string, unknown>, idToken: string} | TokenError>} the ID token's claims;
   *   or why not (`unavailable`: the provider could not be asked). Never rejects.
   */
  async redeem(code, login, redirectUri) {
    const metadata = this.metadata;
    if (metadata === null) return new TokenError('the provider\'s metadata is not read yet', { unavailable: true });
    let answer;
    try {
      answer = await this.tokenRequest(metadata, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: login.verifier });
    } catch (err) {
      return new TokenError(`the token endpoint could not be asked: ${err.message}`, { unavailable: true });
    }
    if (answer.status !== 200) {
      const error = answer.json !== null && typeof answer.json.error === 'string' ? answer.json.error.slice(0, 60) : `status ${answer.status}`;
      return new TokenError(`the token endpoint refused the code (${error})`);
    }
    const idToken = answer.json === null ? undefined : answer.json.id_token;
    if (typeof idToken !== 'string') return new TokenError('the token endpoint gave no ID token');
    const claims = await this.verifier.verify(idToken);
    if (claims instanceof TokenError) return claims;
    if (claims.nonce !== login.nonce) return new TokenError('the ID token\'s nonce is not the login\'s');
    // OpenID Connect Core §3.1.3.7: a token for several audiences names the client it was issued to.
    if (claims.azp !== undefined && claims.azp !== this.clientId) return new TokenError('the ID token was issued to another client (azp)');
    if (typeof claims.sub !== 'string' || claims.sub === '') return new TokenError('the ID token has no sub');
    // Core §5.4: the scopes' claims may be at the UserInfo endpoint only; taken there when its sub is the token's (§5.3.2).
    const accessToken = answer.json.access_token;
    if ((claims.email === undefined || claims.preferred_username === undefined) && typeof metadata.userinfo_endpoint === 'string' &&
      typeof accessToken === 'string') {
      const info = await this.userInfo(metadata.userinfo_endpoint, accessToken).catch(() => null);
      if (info !== null && info.sub === claims.sub) return { claims: { ...info, ...claims }, idToken };
    }
    return { claims, idToken };
  }

  // The UserInfo endpoint's claims (its JSON answer), or null.
  async userInfo(endpoint, accessToken) {
    const answer = await send(new URL(endpoint), 'GET', { accept: 'application/json', authorization: `Bearer ${accessToken}` }, null);
    return answer.status === 200 ? answer.json : null;
  }

  /**
   * Where a browser logging out is sent: the provider's `end_session_endpoint`
   * (RP-Initiated Logout 1.0), with the ID token as a hint when it was kept.
   *
   * @param {string | null} idToken
   * @param {string} postLogoutUri where the provider may send the browser after (registered with it)
   * @returns {string | null} null: the provider has none
   */
  logoutUrl(idToken, postLogoutUri) {
    const metadata = this.keySet.metadata;
    const endpoint = metadata === null ? undefined : metadata.end_session_endpoint;
    if (typeof endpoint !== 'string') return null;
    let url;
    try {
      url = new URL(endpoint);
    } catch {
      return null;
    }
    url.searchParams.set('client_id', this.clientId);
    if (idToken !== null) url.searchParams.set('id_token_hint', idToken);
    url.searchParams.set('post_logout_redirect_uri', postLogoutUri);
    return url.href;
  }

  // A form POSTed to the token endpoint, the client authenticated as the provider offers.
  async tokenRequest(metadata, parameters) {
    const url = new URL(metadata.token_endpoint);
    const form = new URLSearchParams(parameters);
    const headers = { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' };
    const method = authMethod(metadata.token_endpoint_auth_methods_supported, this.clientSecret !== null);
    if (method === 'client_secret_basic') {
      // RFC 6749 §2.3.1: each form-urlencoded before they are joined.
      const pair = `${formEncoded(this.clientId)}:${formEncoded(this.clientSecret)}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    } else {
      form.set('client_id', this.clientId);
      if (method === 'client_secret_post') form.set('client_secret', this.clientSecret);
    }
    const body = form.toString();
    headers['content-length'] = Buffer.byteLength(body);
    return send(url, 'POST', headers, body);
  }
}

module.exports = { OpenIdClient, CODE_EXCHANGE_MS };

// One exchange with the provider within CODE_EXCHANGE_MS; its answer's JSON object, or null.
async function send(url, method, headers, body) {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('its URL is not http(s)');
  const options = {
    method,
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    headers,
    agent: false
  };
  const answer = await exchange(url.protocol === 'https:' ? https : http, options, body, { timeout: CODE_EXCHANGE_MS, maxBody: MAX_ANSWER });
  let json;
  try {
    json = JSON.parse(answer.body.toString('utf8'));
  } catch {
    json = null;
  }
  return { status: answer.status, json: typeof json === 'object' && !Array.isArray(json) ? json : null };
}

// A client with a secret: Basic unless the provider names only the form's way (its default is Basic: Discovery §3).
function authMethod(supported, hasSecret) {
  if (!hasSecret) return 'none';
  if (!Array.isArray(supported) || supported.includes('client_secret_basic')) return 'client_secret_basic';
  return supported.includes('client_secret_post') ? 'client_secret_post' : 'client_secret_basic';
}

function formEncoded(text) {
  return new URLSearchParams({ v: text }).toString().slice(2);
}

function randomText() {
  return crypto.randomBytes(RANDOM_BYTES).toString('base64url');
}
