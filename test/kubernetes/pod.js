'use strict';

// A pod of a manifest run here as a kubelet would run it, for the tests of deploy/kubernetes/:
// each container in a mount namespace of its own (`unshare -m`, as root) whose root is a tmpfs
// holding the image's files, with this machine's /usr, /etc, /dev and /proc standing for the
// image's system (so this machine's `node` stands for the official node image's, first on PATH),
// the pod's volumes mounted where its volumeMounts say (emptyDirs, ConfigMaps with their
// data and binaryData, the service account's token, CA and namespace), the root made read-only
// when readOnlyRootFilesystem says so, and the command run by `setpriv` as the pod's user and
// group, with no capability and no_new_privs (allowPrivilegeEscalation: false), in the
// environment the pod spec gives (its fieldRefs resolved) and nothing else. Init containers run
// first, each to its end. The network is the caller's (the Kubernetes suites' namespace); the
// pod's sysctls are set in it while the pod lives. An exec probe runs inside the container, by
// `nsenter` into its mount namespace and root, as the kubelet's exec does.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { onCleanup } = require('../helpers');

// The machine's system, as the image's: bound read-only (dev and proc as they are).
const SYSTEM = ['usr', 'etc'];
const DEVICES = ['dev', 'proc'];
const TOP_LEVEL = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];
const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
const STOP_WITHIN = 10000;
const KEEP_OUTPUT = 64 * 1024;

/**
 * Starts a pod: its init containers, each to its end (rejects, with its output, on a failure),
 * then its first container, left running. Everything is stopped and removed on cleanup.
 *
 * @param {object} options
 * @param {object} options.spec the pod spec (a Deployment's spec.template.spec, as the API server stored it)
 * @param {string} options.name the pod's name (metadata.name, and HOSTNAME)
 * @param {string} options.namespace the pod's namespace
 * @param {Record<string, object>} [options.configMaps] ConfigMaps by name, as the API server answers them
 * @param {{token: string, caFile: string}} [options.serviceAccount] what the service account volume holds
 * @param {Record<string, string>} [options.env] what the kubelet adds (KUBERNETES_SERVICE_HOST and _PORT)
 * @param {Record<string, Image>} [options.images] images by name; any other stands for an image with no file of its own
 * @returns {Promise<Pod>}
 */
async function startPod({ spec, name, namespace, configMaps = {}, serviceAccount, env = {}, images = {} }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-pod-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const volumes = makeVolumes(dir, spec, configMaps, serviceAccount, namespace);
  setSysctls(spec.securityContext || {});
  const context = { dir, spec, name, namespace, volumes, env, images };
  for (const container of spec.initContainers || []) {
    const init = runContainer(context, container);
    const ended = await init.ended;
    if (ended !== 0) throw new Error(`init container ${container.name} ended with ${ended}:\n${init.output()}`);
  }
  const pod = runContainer(context, spec.containers[0]);
  pod.volumes = volumes;
  return pod;
}

/**
 * @typedef {object} Image what `docker build` made (test/kubernetes/dockerfile.js)
 * @property {string} root a directory holding the image's own files, at their paths
 * @property {string[]} entrypoint
 * @property {string[]} cmd
 * @property {Record<string, string>} env
 * @property {string} [user] `uid[:gid]`
 * @property {string} [workdir]
 */

/**
 * @typedef {object} Pod
 * @property {import('node:child_process').ChildProcess} child the container's process
 * @property {string[]} argv what it runs (after PATH), as the container's spec and image make it
 * @property {Record<string, string>} environment its environment, whole
 * @property {{uid: number, gid: number}} user
 * @property {() => string} output the last 64 KB it wrote, stdout and stderr
 * @property {Promise<number | string>} ended its exit code (or signal) once it has ended, its output all read
 * @property {(pattern: RegExp, ms?: number) => Promise<string>} waitFor the first line of its output matching, once there
 * @property {(command: string[]) => Promise<{code: number | null, output: string}>} exec a command in the container
 * @property {Record<string, string>} volumes each volume's directory here, by name
 * @property {() => Promise<void>} stop SIGTERM, then SIGKILL after 10 s
 */

/**
 * What a container runs, as Kubernetes makes it of the spec and the image: `command` replaces
 * the image's entrypoint (and its cmd), `args` its cmd.
 *
 * @param {{command?: string[], args?: string[]}} container
 * @param {{entrypoint?: string[], cmd?: string[]}} image
 * @returns {string[]}
 */
function commandLine(container, image) {
  if (container.command !== undefined) return [...container.command, ...(container.args || [])];
  return [...(image.entrypoint || []), ...(container.args !== undefined ? container.args : image.cmd || [])];
}

/**
 * Runs a command on a root of its own, as a container: the root directory `root` (a tmpfs over
 * it with `tmpfs`, else the directory itself, written to), the machine's system bound in.
 *
 * @param {object} options
 * @param {string} options.root
 * @param {boolean} [options.tmpfs] the root is a new tmpfs with `files` copied in (else `root` itself)
 * @param {string} [options.files] a directory whose content is copied to the tmpfs root (the image's files)
 * @param {{path: string, source: string, readOnly?: boolean}[]} [options.mounts]
 * @param {boolean} [options.readOnlyRoot]
 * @param {number} options.uid
 * @param {number} options.gid
 * @param {string} [options.workdir]
 * @param {Record<string, string>} options.env the whole environment
 * @param {string[]} options.argv
 * @param {boolean} [options.dropCapabilities] none left, not even in the bounding set (capabilities.drop: [ALL])
 * @param {boolean} [options.noNewPrivileges] no_new_privs (allowPrivilegeEscalation: false)
 * @returns {import('node:child_process').ChildProcess}
 */
function spawnContained({ root, tmpfs = true, files, mounts = [], readOnlyRoot = false, uid, gid, workdir = '/', env, argv, dropCapabilities = false, noNewPrivileges = false }) {
  const nodeDir = path.dirname(process.execPath);
  const lines = ['set -e', 'R="$1"; shift'];
  if (tmpfs) lines.push('mount -t tmpfs -o mode=0755 lila-pod "$R"');
  if (files !== undefined) lines.push(`cp -a ${quote(`${files}/.`)} "$R/"`);
  for (const name of TOP_LEVEL) {
    const host = `/${name}`;
    if (!fs.existsSync(host)) continue;
    if (fs.lstatSync(host).isSymbolicLink()) lines.push(`[ -e ${inRoot(host)} ] || [ -L ${inRoot(host)} ] || cp -P ${host} ${inRoot(host)}`);
    else lines.push(...bind(host, host, true));
  }
  for (const name of SYSTEM) lines.push(...bind(`/${name}`, `/${name}`, true));
  for (const name of DEVICES) lines.push(...bind(`/${name}`, `/${name}`, false));
  // This machine's node, where it is, when /usr does not hold it.
  if (!nodeDir.startsWith('/usr/')) lines.push(...bind(nodeDir, nodeDir, true));
  for (const mount of mounts) lines.push(...bind(mount.source, mount.path, mount.readOnly === true));
  if (readOnlyRoot) lines.push('mount -o remount,ro "$R"');
  lines.push(`exec chroot "$R" /usr/bin/env -i --chdir=${quote(workdir)} "$@"`);
  return spawn('unshare', ['-m', 'sh', '-c', lines.join('\n'), 'contained', root,
    ...assignments(env), ...setpriv({ uid, gid, dropCapabilities, noNewPrivileges }), ...argv], {
    stdio: ['ignore', 'pipe', 'pipe']
  });
}

module.exports = { startPod, commandLine, spawnContained };

// The container's process, with what it runs and how to reach it.
function runContainer({ dir, spec, name, namespace, volumes, env, images }, container) {
  const image = images[container.image] || {};
  const argv = commandLine(container, image);
  if (argv.length === 0) throw new Error(`container ${container.name}: no command (image ${container.image})`);
  const security = { ...(spec.securityContext || {}), ...(container.securityContext || {}) };
  const [imageUid, imageGid] = String(image.user || '0').split(':');
  const uid = security.runAsUser !== undefined ? security.runAsUser : Number(imageUid);
  const gid = security.runAsGroup !== undefined ? security.runAsGroup : Number(imageGid || 0);
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error(`container ${container.name}: user ${image.user} is not numeric`);
  if (security.runAsNonRoot === true && uid === 0) throw new Error(`container ${container.name}: runAsNonRoot, but the user is root`);
  const environment = {
    // The node image's PATH, this machine's node first in it.
    PATH: `${path.dirname(process.execPath)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOSTNAME: name,
    ...(image.env || {}),
    ...env,
    ...containerEnv(container, { name, namespace })
  };
  const mounts = (container.volumeMounts || []).map((mount) => {
    if (!Object.hasOwn(volumes, mount.name)) throw new Error(`container ${container.name} mounts ${mount.name}, which the pod has not`);
    return { path: mount.mountPath, source: volumes[mount.name], readOnly: mount.readOnly === true };
  });
  if (volumes[SERVICE_ACCOUNT] !== undefined) mounts.push({ path: SERVICE_ACCOUNT, source: volumes[SERVICE_ACCOUNT], readOnly: true });
  const root = fs.mkdtempSync(path.join(dir, `${container.name}-root-`));
  const privileges = {
    dropCapabilities: ((security.capabilities || {}).drop || []).includes('ALL'),
    noNewPrivileges: security.allowPrivilegeEscalation === false
  };
  const child = spawnContained({
    root,
    files: image.root,
    mounts,
    readOnlyRoot: security.readOnlyRootFilesystem === true,
    uid,
    gid,
    workdir: container.workingDir || image.workdir || '/',
    env: environment,
    argv,
    ...privileges
  });
  const kept = { text: '' };
  const keep = (text) => { kept.text = (kept.text + text).slice(-KEEP_OUTPUT); };
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  const closed = new Promise((resolve) => child.once('close', (code, signal) => resolve(code === null ? signal : code)));
  child.once('error', (err) => keep(`\ncannot start the container: ${err.message}\n`));
  onCleanup(() => stop());

  async function stop() {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_WITHIN);
    await closed;
    clearTimeout(timer);
  }

  function waitFor(pattern, ms = 60000) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const line = kept.text.split('\n').find((candidate) => pattern.test(candidate));
        if (line === undefined) return false;
        done();
        resolve(line);
        return true;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`container ${container.name}: no line matching ${pattern} within ${ms} ms:\n${kept.text}`));
      }, ms);
      const onData = () => check();
      const onClose = (code) => {
        if (check()) return;
        done();
        reject(new Error(`container ${container.name} ended (${code}) without a line matching ${pattern}:\n${kept.text}`));
      };
      function done() {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stderr.off('data', onData);
        child.off('close', onClose);
      }
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('close', onClose);
      check();
    });
  }

  // As the kubelet's exec: the container's mount namespace, root and directory, user and environment.
  function exec(command) {
    const probe = spawn('nsenter', [`--target=${child.pid}`, '--mount', '--root', '--wd', '/usr/bin/env', '-i',
      ...assignments(environment), ...setpriv({ uid, gid, ...privileges }), ...command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    probe.stdout.setEncoding('utf8').on('data', (text) => { output += text; });
    probe.stderr.setEncoding('utf8').on('data', (text) => { output += text; });
    return new Promise((resolve, reject) => {
      probe.once('error', reject);
      probe.once('close', (code) => resolve({ code, output }));
    });
  }

  return { child, argv, environment, user: { uid, gid }, output: () => kept.text, ended: closed, waitFor, exec, stop };
}

// The pod's volumes as directories here: emptyDirs writable by all (as the kubelet makes them),
// ConfigMaps' keys as files (root's, mode defaultMode), and the service account's.
function makeVolumes(dir, spec, configMaps, serviceAccount, namespace) {
  const volumes = {};
  for (const volume of spec.volumes || []) {
    const target = path.join(dir, 'volumes', volume.name);
    fs.mkdirSync(target, { recursive: true });
    if (volume.emptyDir !== undefined) {
      fs.chmodSync(target, 0o777);
    } else if (volume.configMap !== undefined) {
      const configMap = configMaps[volume.configMap.name];
      if (configMap === undefined) throw new Error(`volume ${volume.name}: no ConfigMap ${volume.configMap.name} (the kubelet would wait for it)`);
      const mode = volume.configMap.defaultMode === undefined ? 0o644 : volume.configMap.defaultMode;
      for (const [key, value] of Object.entries(configMap.data || {})) fs.writeFileSync(path.join(target, key), value, { mode });
      for (const [key, value] of Object.entries(configMap.binaryData || {})) fs.writeFileSync(path.join(target, key), Buffer.from(value, 'base64'), { mode });
    } else {
      throw new Error(`volume ${volume.name}: only emptyDir and configMap volumes are run here`);
    }
    volumes[volume.name] = target;
  }
  if (serviceAccount !== undefined && spec.automountServiceAccountToken !== false) {
    const target = path.join(dir, 'volumes', 'kube-api-access');
    fs.mkdirSync(target, { recursive: true });
    fs.writeFileSync(path.join(target, 'token'), serviceAccount.token, { mode: 0o644 });
    fs.copyFileSync(serviceAccount.caFile, path.join(target, 'ca.crt'));
    fs.chmodSync(path.join(target, 'ca.crt'), 0o644);
    fs.writeFileSync(path.join(target, 'namespace'), namespace, { mode: 0o644 });
    volumes[SERVICE_ACCOUNT] = target;
  }
  return volumes;
}

// The container's env: values, and the fieldRefs a pod's metadata answers.
function containerEnv(container, metadata) {
  const env = {};
  for (const item of container.env || []) {
    if (item.value !== undefined) env[item.name] = item.value;
    else if (item.valueFrom && item.valueFrom.fieldRef && item.valueFrom.fieldRef.fieldPath === 'metadata.name') env[item.name] = metadata.name;
    else if (item.valueFrom && item.valueFrom.fieldRef && item.valueFrom.fieldRef.fieldPath === 'metadata.namespace') env[item.name] = metadata.namespace;
    else throw new Error(`container ${container.name}: env ${item.name} is neither a value nor metadata.name or .namespace`);
  }
  return env;
}

// The pod's sysctls (network ones: the network namespace's own), put back on cleanup.
function setSysctls(securityContext) {
  for (const { name, value } of securityContext.sysctls || []) {
    if (!name.startsWith('net.')) throw new Error(`sysctl ${name}: only the network namespace's are set here`);
    const file = path.join('/proc/sys', ...name.split('.'));
    const before = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, value);
    onCleanup(() => fs.writeFileSync(file, before));
  }
}

// setpriv's command line, up to the command: the user and group, and what the container may not.
function setpriv({ uid, gid, dropCapabilities, noNewPrivileges }) {
  return ['/usr/bin/setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups',
    ...(dropCapabilities ? ['--inh-caps=-all', '--bounding-set=-all'] : []), ...(noNewPrivileges ? ['--no-new-privs'] : []), '--'];
}

// An environment as env(1) takes it: NAME=value words.
function assignments(env) {
  return Object.entries(env).map(([key, value]) => `${key}=${value}`);
}

// The lines that bind `source` at `target`, a path in the root (made first), read-only if asked.
function bind(source, target, readOnly) {
  const lines = [`mkdir -p ${inRoot(target)}`, `mount --rbind ${quote(source)} ${inRoot(target)}`];
  if (readOnly) lines.push(`mount -o remount,bind,ro ${inRoot(target)}`);
  return lines;
}

// A path in the root, as the script's shell words it.
function inRoot(target) {
  return `"$R"${quote(target)}`;
}

function quote(text) {
  return `'${String(text).replace(/'/g, "'\\''")}'`;
}
