'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { LilaError, codes } = require('../errors');
const { parse } = require('./yaml');

// Where a pod's service account is mounted.
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
// What a user may hold that lila cannot use, and why, as one sentence's end.
const REFUSED_USER_FIELDS = {
  exec: 'gets its credentials from a program (exec), which lila does not run; give it a token, a tokenFile or a client certificate',
  'auth-provider': 'gets its credentials from an auth-provider plugin, which lila does not have; give it a token, a tokenFile or a client certificate',
  username: 'authenticates with a username and password, which Kubernetes no longer accepts; give it a token or a client certificate',
  as: 'impersonates another user ("as"), which lila does not do'
};

/**
 * How to reach the Kubernetes API: from the service account of the pod lila
 * runs in, as client-go's in-cluster config does, or from a kubeconfig file
 * (`kubeconfig`, else `$KUBECONFIG`'s first file, else `~/.kube/config`).
 * With `inCluster` unset: a kubeconfig named by the option or `$KUBECONFIG`
 * first, then in-cluster when `KUBERNETES_SERVICE_HOST` is set, then
 * `~/.kube/config`.
 *
 * @param {object} [options]
 * @param {string} [options.kubeconfig] a kubeconfig file
 * @param {string} [options.context] its context to use (default: its current-context)
 * @param {NodeJS.ProcessEnv} [options.env] the environment (process.env)
 * @param {boolean} [options.inCluster] true: the service account only; false: a kubeconfig only
 * @param {string} [options.serviceAccountDir] where the service account is mounted (tests)
 * @returns {{server: string, ca: Buffer | undefined, token: string | undefined, tokenFile: string | undefined,
 *   cert: Buffer | undefined, key: Buffer | undefined, insecure: boolean, serverName: string | undefined,
 *   namespace: string, source: string}} server: `https://host:port` (and the path of a proxied API);
 *   tokenFile: where the token is read again (rotated tokens); source: `in-cluster` or `FILE (context NAME)`
 * @throws {LilaError} CONFIG: one sentence naming the file and what is wrong with it
 */
function connectionOf({ kubeconfig, context, env = process.env, inCluster, serviceAccountDir = SERVICE_ACCOUNT_DIR } = {}) {
  const named = kubeconfig || firstOf(env.KUBECONFIG);
  if (inCluster === true || (inCluster === undefined && !named && env.KUBERNETES_SERVICE_HOST)) {
    return inClusterConnection(env, serviceAccountDir);
  }
  const home = env.HOME || os.homedir();
  return fileConnection(path.resolve(named || path.join(home, '.kube', 'config')), context);
}

module.exports = { connectionOf, SERVICE_ACCOUNT_DIR };

function inClusterConnection(env, dir) {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw configError('lila is not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set for the in-cluster configuration');
  }
  const tokenFile = path.join(dir, 'token');
  const token = readText(tokenFile, 'the service account token').trim();
  // client-go goes on without the CA when it cannot read it; so does lila (the system's CAs are used).
  const ca = readOptional(path.join(dir, 'ca.crt'));
  const namespaceText = readOptional(path.join(dir, 'namespace'));
  const namespace = env.POD_NAMESPACE || (namespaceText && namespaceText.toString('utf8').trim()) || 'default';
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ca,
    token,
    tokenFile,
    cert: undefined,
    key: undefined,
    insecure: false,
    serverName: undefined,
    namespace,
    source: 'in-cluster'
  };
}

function fileConnection(file, contextName) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw configError(`cannot read the kubeconfig ${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
  }
  let config;
  try {
    config = parse(text);
  } catch (err) {
    throw configError(`the kubeconfig ${file} is not valid YAML: ${err.message}`);
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw configError(`the kubeconfig ${file} is not a mapping`);
  const name = contextName || config['current-context'];
  if (!name) throw configError(`the kubeconfig ${file} has no current-context; name a context`);
  const context = named(config, 'contexts', 'context', name, file);
  if (!context.cluster) throw configError(`the kubeconfig ${file}: context "${name}" names no cluster`);
  const cluster = named(config, 'clusters', 'cluster', String(context.cluster), file);
  const user = context.user ? named(config, 'users', 'user', String(context.user), file) : {};
  for (const [field, why] of Object.entries(REFUSED_USER_FIELDS)) {
    if (user[field] !== undefined && user[field] !== null && user[field] !== '') {
      throw configError(`the kubeconfig ${file}: user "${context.user}" ${why}`);
    }
  }
  if (cluster['proxy-url']) throw configError(`the kubeconfig ${file}: cluster "${context.cluster}" goes through a proxy (proxy-url), which lila does not do`);
  const dir = path.dirname(file);
  const at = (field) => path.resolve(dir, String(field));
  const bytes = (owner, dataField, fileField) => {
    if (owner[dataField]) return decodeBase64(owner[dataField], `${file}: ${dataField}`);
    if (owner[fileField]) return readBytes(at(owner[fileField]), `the ${fileField} of the kubeconfig ${file}`);
    return undefined;
  };
  let token = user.token ? String(user.token).trim() : undefined;
  let tokenFile;
  if (!token && user.tokenFile) {
    tokenFile = at(user.tokenFile);
    token = readText(tokenFile, `the tokenFile of the kubeconfig ${file}`).trim();
  }
  const cert = bytes(user, 'client-certificate-data', 'client-certificate');
  const key = bytes(user, 'client-key-data', 'client-key');
  if ((cert === undefined) !== (key === undefined)) {
    throw configError(`the kubeconfig ${file}: user "${context.user}" has a client certificate without its key, or a key without its certificate`);
  }
  return {
    server: serverOf(cluster.server, file, context.cluster),
    ca: bytes(cluster, 'certificate-authority-data', 'certificate-authority'),
    token,
    tokenFile,
    cert,
    key,
    insecure: cluster['insecure-skip-tls-verify'] === true || cluster['insecure-skip-tls-verify'] === 'true',
    serverName: cluster['tls-server-name'] ? String(cluster['tls-server-name']) : undefined,
    namespace: context.namespace ? String(context.namespace) : 'default',
    source: `${file} (context ${name})`
  };
}

// The entry of a kubeconfig list (contexts, clusters, users) with this name.
function named(config, list, field, name, file) {
  const entries = Array.isArray(config[list]) ? config[list] : [];
  const entry = entries.find((e) => e && typeof e === 'object' && String(e.name) === name);
  if (entry === undefined) {
    const names = entries.map((e) => e && e.name).filter(Boolean);
    throw configError(`the kubeconfig ${file} has no ${field} "${name}"${names.length > 0 ? ` (it has: ${names.join(', ')})` : ''}`);
  }
  const value = entry[field];
  return value && typeof value === 'object' ? value : {};
}

function serverOf(server, file, clusterName) {
  if (!server) throw configError(`the kubeconfig ${file}: cluster "${clusterName}" has no server`);
  // client-go takes a bare host:port as https.
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(String(server)) ? String(server) : `https://${server}`;
  let url;
  try {
    url = new URL(text);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw configError(`the kubeconfig ${file}: cluster "${clusterName}" has a server that is no http(s) URL: "${server}"`);
  }
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

function decodeBase64(value, what) {
  const text = String(value).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw configError(`${what} is not base64`);
  return Buffer.from(text, 'base64');
}

function readBytes(file, what) {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw configError(`cannot read ${what} (${file}): ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
  }
}

function readText(file, what) {
  return readBytes(file, what).toString('utf8');
}

function readOptional(file) {
  try {
    return fs.readFileSync(file);
  } catch {
    return undefined;
  }
}

function firstOf(list) {
  return (list || '').split(path.delimiter).find((entry) => entry !== '') || undefined;
}

function configError(message) {
  return new LilaError(codes.CONFIG, message);
}
