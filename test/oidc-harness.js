'use strict';

// What the OpenID Connect tests share: a real OpenID provider (oidc-provider from npm, its own
// login and consent pages), a browser that keeps cookies and follows redirects by hand, and lila
// (the executable, with a config file) in front of an echo backend.

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const { onCleanup, spawnLila, nextLine } = require('./helpers');

const CLIENT_ID = 'lila';
const CLIENT_SECRET = 'a-client-secret';
const COOKIE_SECRET = 'a cookie secret of 32 characters';

/**
 * oidc-provider on 127.0.0.1:0, with one confidential client whose redirect and post-logout
 * URIs are lila's on these ports (http and https); its dev interactions take any login and password.
 *
 * @param {number[]} ports lila's
 * @returns {Promise<{issuer: string, port: number, provider: object, tokenRequests: number}>}
 */
async function startProvider(ports) {
  const { default: Provider } = await import('oidc-provider');
  const server = http.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onCleanup(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const provider = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: origins(ports).map((origin) => `${origin}/oauth2/callback`),
      post_logout_redirect_uris: origins(ports).map((origin) => `${origin}/`),
      grant_types: ['authorization_code'],
      response_types: ['code']
    }],
    findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub, email: `${sub}@example.com`, preferred_username: `${sub}.name` }) }),
    claims: { openid: ['sub'], email: ['email'], profile: ['preferred_username'] },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    pkce: { required: () => true },
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'provider-key', alg: 'RS256', use: 'sig' }] },
    cookies: { keys: ['a provider cookie key'] }
  });
  const state = { issuer, port: server.address().port, provider, tokenRequests: 0 };
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.url === '/token') state.tokenRequests++;
    callback(req, res);
  });
  return state;
}

/**
 * A browser's cookies and navigation: cookies kept by name and path for 127.0.0.1 (whatever
 * the port, as browsers do), redirects followed, each navigation accepting text/html.
 */
class Browser {
  /**
   * @param {{ca?: string}} [options] `ca`: the authority lila's https certificate is trusted by
   */
  constructor(options = {}) {
    this.ca = options.ca;
    /** @type {((url: string) => boolean) | undefined} a redirect to a URL it holds for is not followed (`next`) */
    this.stopAt = undefined;
    this.cookies = new Map();
    /** Every URL asked, in order. */
    this.visited = [];
  }

  /**
   * One request, its Set-Cookie kept.
   *
   * @param {string} url
   * @param {{method?: string, headers?: object, body?: string}} [options]
   * @returns {Promise<{status: number, headers: object, body: string, url: string}>}
   */
  request(url, options = {}) {
    const target = new URL(url);
    const headers = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', ...options.headers };
    const cookie = this.cookieHeader(target.pathname);
    if (cookie !== '' && headers.cookie === undefined) headers.cookie = cookie;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      headers['content-length'] = Buffer.byteLength(options.body);
    }
    this.visited.push(url);
    return new Promise((resolve, reject) => {
      const secure = target.protocol === 'https:';
      const req = (secure ? https : http).request({ host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`,
        method: options.method || 'GET', headers, agent: false, ...(secure ? { ca: this.ca } : {}) }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => { body += chunk; });
        res.on('end', () => {
          this.keep(res.headers['set-cookie'] || []);
          resolve({ status: res.statusCode, headers: res.headers, body, url });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(options.body);
    });
  }

  /**
   * A request and the redirects after it (303 and 302 become GETs), to the first other answer.
   *
   * @param {string} url
   * @param {{method?: string, headers?: object, body?: string}} [options]
   * @returns {Promise<{status: number, headers: object, body: string, url: string}>}
   */
  async navigate(url, options = {}) {
    let answer = await this.request(url, options);
    for (let hops = 0; answer.status >= 300 && answer.status < 400 && answer.headers.location !== undefined; hops++) {
      if (hops === 20) throw new Error(`more than 20 redirects from ${url}`);
      const next = new URL(answer.headers.location, answer.url).href;
      if (this.stopAt !== undefined && this.stopAt(next)) return { ...answer, next };
      answer = await this.request(next);
    }
    return answer;
  }

  /**
   * Submits the page's first form: its hidden fields, and these values.
   *
   * @param {{body: string, url: string}} page
   * @param {Record<string, string>} values
   */
  submit(page, values = {}) {
    const form = /<form([^>]*)>([\s\S]*?)<\/form>/i.exec(page.body);
    if (form === null) throw new Error(`no form on ${page.url}: ${page.body.slice(0, 500)}`);
    const action = new URL(/action="([^"]*)"/.exec(form[1])[1].replace(/&amp;/g, '&'), page.url).href;
    const fields = new URLSearchParams();
    for (const [input] of form[2].matchAll(/<input[^>]*>/g)) {
      const name = /name="([^"]*)"/.exec(input);
      const value = /value="([^"]*)"/.exec(input);
      if (name !== null) fields.set(name[1], values[name[1]] ?? (value === null ? '' : value[1]));
    }
    for (const [name, value] of Object.entries(values)) if (!fields.has(name)) fields.set(name, value);
    return this.navigate(action, { method: 'POST', body: fields.toString() });
  }

  /** Through the provider's login and consent pages, from a page of lila, back to where it began. */
  async logIn(url, login = 'alice') {
    const loginPage = await this.navigate(url);
    if (!/name="login"/.test(loginPage.body)) throw new Error(`no login page at ${loginPage.url} (${loginPage.status}): ${loginPage.body.slice(0, 300)}`);
    const consent = await this.submit(loginPage, { login, password: 'any' });
    return /name="prompt" value="consent"/.test(consent.body) ? this.submit(consent) : consent;
  }

  /** @returns {string | undefined} a cookie's value */
  cookie(name) {
    for (const entry of this.cookies.values()) if (entry.name === name) return entry.value;
    return undefined;
  }

  /** @returns {{name: string, value: string, path: string, attributes: string}[]} the cookies kept */
  entries() {
    return [...this.cookies.values()];
  }

  keep(setCookies) {
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';');
      const equals = pair.indexOf('=');
      const name = pair.slice(0, equals).trim();
      const value = pair.slice(equals + 1).trim();
      const pathAttribute = attributes.map((item) => item.trim()).find((item) => item.toLowerCase().startsWith('path='));
      const cookiePath = pathAttribute === undefined ? '/' : pathAttribute.slice(5);
      const key = `${name};${cookiePath}`;
      const maxAge = /max-age=(-?\d+)/i.exec(line);
      const expired = (maxAge !== null && Number(maxAge[1]) <= 0) || /expires=Thu, 01 Jan 1970/i.test(line);
      if (expired) this.cookies.delete(key);
      else this.cookies.set(key, { name, value, path: cookiePath, attributes: attributes.join(';').trim() });
    }
  }

  cookieHeader(pathname) {
    return this.entries().filter((entry) => pathname === entry.path || pathname.startsWith(entry.path.endsWith('/') ? entry.path : `${entry.path}/`))
      .map((entry) => `${entry.name}=${entry.value}`).join('; ');
  }
}

/**
 * lila (the executable) on this port: a route /app with --oidc-* before an echo backend, and /open without.
 *
 * @param {{issuer: string}} provider
 * @param {number} port
 * @param {string} backend its address
 * @param {{args?: string[], session?: string, scopes?: string, tls?: {certFile: string, keyFile: string}, admin?: number}} [options]
 *   `args` after --config; `tls`: the listener serves https with this certificate
 */
async function startOidcLila(provider, port, backend, options = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oidc-lila-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = path.join(dir, 'lila.conf');
  const session = `${options.session === undefined ? '' : ` --oidc-session ${options.session}`}${options.scopes === undefined ? '' : ` --oidc-scopes ${options.scopes}`}`;
  const tls = options.tls === undefined ? '' : ` --tls-cert ${options.tls.certFile} --tls-key ${options.tls.keyFile}`;
  fs.writeFileSync(config, [
    `pool web round-robin ${backend}`,
    `listen 127.0.0.1:${port}${tls}`,
    `  route /app web --oidc-issuer ${provider.issuer} --oidc-client-id ${CLIENT_ID} --oidc-cookie-secret "${COOKIE_SECRET}"${session}`,
    '  route /open web',
    ''
  ].join('\n'));
  const admin = options.admin === undefined ? [] : ['--admin', `127.0.0.1:${options.admin}`];
  // The client secret from the environment, as a service manager gives it.
  process.env.LILA_OIDC_CLIENT_SECRET = CLIENT_SECRET;
  let lila;
  try {
    lila = spawnLila(['--config', config, '--access-log', ...admin, ...(options.args || [])]);
  } finally {
    delete process.env.LILA_OIDC_CLIENT_SECRET;
  }
  await nextLine(lila, /lila: https? listening on .*/, 10000);
  return Object.assign(lila, { port, url: `${tls === '' ? 'http' : 'https'}://127.0.0.1:${port}` });
}

module.exports = { CLIENT_ID, CLIENT_SECRET, COOKIE_SECRET, startProvider, Browser, startOidcLila };

// Where a browser reaches lila on each port, over http or https.
function origins(ports) {
  return ports.flatMap((port) => [`http://127.0.0.1:${port}`, `https://127.0.0.1:${port}`]);
}
