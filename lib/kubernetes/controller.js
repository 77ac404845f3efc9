'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { KubeClient } = require('./kube-client');
const { ResourceWatch } = require('./resource-watch');
const { LeaderLease } = require('./lease');
const { Snapshot } = require('./snapshot');
const { translate } = require('./translate');
const { statusWrites } = require('./status-writer');
const { LilaError, codes } = require('../errors');

// lila --kubernetes: the resources of a cluster followed by watches, made into a config text
// (translate.js) and run as a reload, each burst of changes once; the status of what it
// serves written back by the one lila that holds the Lease. The API server is never on a
// request's path: when it is lost, what runs keeps running.

const GATEWAY_API = '/apis/gateway.networking.k8s.io';
const RESOURCES = {
  gatewayclasses: `${GATEWAY_API}/v1/gatewayclasses`,
  gateways: `${GATEWAY_API}/v1/gateways`,
  httproutes: `${GATEWAY_API}/v1/httproutes`,
  grpcroutes: `${GATEWAY_API}/v1/grpcroutes`,
  // The experimental channel's: absent (and retried now and then) where its CRDs are not installed.
  tlsroutes: `${GATEWAY_API}/v1alpha2/tlsroutes`,
  tcproutes: `${GATEWAY_API}/v1alpha2/tcproutes`,
  referencegrants: `${GATEWAY_API}/v1beta1/referencegrants`,
  services: '/api/v1/services',
  endpointslices: '/apis/discovery.k8s.io/v1/endpointslices',
  // Only TLS Secrets: lila reads no other.
  secrets: '/api/v1/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls',
  namespaces: '/api/v1/namespaces',
  ingresses: '/apis/networking.k8s.io/v1/ingresses',
  ingressclasses: '/apis/networking.k8s.io/v1/ingressclasses'
};
// Changes closer together than this are applied as one reload.
const COALESCE_MS = 50;
// The first complete read of every resource at start: past it, lila exits 1 with one line.
const START_WITHIN_MS = 30000;
const LEASE_NAME = 'lila-lb-gateway-controller';

class KubernetesController {
  /**
   * @param {object} options
   * @param {ReturnType<typeof import('./kubeconfig').connectionOf>} options.connection
   * @param {string} [options.gatewayClass] `--gateway-class`
   * @param {string} [options.gateway] `--gateway NAMESPACE/NAME`
   * @param {string} [options.ingressClass] `--ingress-class`
   * @param {string[]} [options.publishAddresses] `--publish-address`
   * @param {string} [options.publishService] `--publish-service NAMESPACE/NAME`
   * @param {string} options.stateDir where the Secrets' certificates are written (a directory of its own, 0700)
   * @param {object} options.logger
   * @param {string} [options.identity] this lila's name in the Lease (POD_NAME, else host-pid)
   * @param {string} [options.leaseNamespace] where the Lease is (POD_NAMESPACE, else the connection's namespace)
   */
  constructor(options) {
    this.options = options;
    this.logger = options.logger;
    this.client = new KubeClient(options.connection, { logger: this.logger });
    this.secretDir = path.join(options.stateDir, 'kubernetes-certificates');
    this.watches = Object.fromEntries(Object.entries(RESOURCES).map(([kind, resource]) => [kind, new ResourceWatch(this.client, resource, { logger: this.logger })]));
    this.leaseName = `${options.leaseNamespace || options.connection.namespace}/${LEASE_NAME}`;
    this.lease = new LeaderLease(this.client, {
      namespace: options.leaseNamespace || options.connection.namespace,
      name: LEASE_NAME,
      identity: options.identity || `${os.hostname()}-${process.pid}`,
      logger: this.logger
    });
    this.service = null;
    this.applied = { text: null, files: new Map(), at: null, error: null, reloads: 0 };
    this.status = null;
    this.timer = null;
    this.applying = Promise.resolve();
    this.lost = new Set();
    this.statusWrites = { done: 0, failed: 0 };
    this.closed = false;
  }

  /**
   * Reads every resource once (watches stay open) and makes the first config text of them.
   *
   * @returns {Promise<{text: string}>}
   * @throws {LilaError} the API server did not answer every read within 30 s
   */
  async bootstrap() {
    fs.mkdirSync(this.secretDir, { recursive: true, mode: 0o700 });
    for (const watch of Object.values(this.watches)) watch.start();
    let timer;
    const late = new Promise((resolve, reject) => {
      timer = setTimeout(() => {
        // The kinds not read yet, by why: most often one reason (refused, forbidden) for all of them.
        const why = new Map();
        for (const [kind, watch] of Object.entries(this.watches)) {
          if (watch.state !== 'listing' && watch.state !== 'retrying') continue;
          const reason = watch.lastError ? watch.lastError.message.replace(/^.*?: GET \S+: /, '') : 'no answer';
          why.set(reason, [...(why.get(reason) || []), kind]);
        }
        const said = [...why].map(([reason, kinds]) => `${kinds.join(', ')}: ${reason}`).join('; ');
        reject(new LilaError(codes.STORE, `kubernetes: ${this.client.server} did not answer within ${START_WITHIN_MS / 1000} s (${said})`));
      }, START_WITHIN_MS);
    });
    try {
      await Promise.race([Promise.all(Object.values(this.watches).map((watch) => watch.synced)), late]);
    } finally {
      clearTimeout(timer);
    }
    const made = this.make();
    this.writeFiles(made.files);
    this.status = made.status;
    this.applied = { ...this.applied, text: made.text, files: made.files, at: new Date() };
    return { text: made.text };
  }

  /**
   * Follows the cluster from now on, for a service that runs what `bootstrap` gave.
   *
   * @param {import('../service/service')} service
   */
  attach(service) {
    this.service = service;
    const { connection } = this.options;
    this.logger.info(`kubernetes: following ${connection.server} (${connection.source}) as ${this.lease.identity}`);
    for (const [kind, watch] of Object.entries(this.watches)) {
      watch.on('change', () => this.schedule());
      watch.on('lost', (err) => this.watchLost(kind, err));
      watch.on('back', () => this.watchBack(kind));
    }
    this.lease.on('lead', () => {
      this.logger.info(`kubernetes: this lila writes the status of what it serves (Lease ${this.leaseName})`);
      this.schedule();
    });
    this.lease.on('follow', () => {
      const { holder, identity } = this.lease;
      // Its own Lease run out (the API server lost longer than it lasts) is not another lila's turn.
      if (holder !== null && holder !== identity) this.logger.info(`kubernetes: ${holder} writes the status now (Lease ${this.leaseName})`);
      else this.logger.warn(`kubernetes: could not renew the Lease ${this.leaseName} in time; this lila writes no status until it holds it again`);
    });
    this.lease.start();
    // What changed between bootstrap and now, and the first status.
    this.schedule();
  }

  // The API server lost: one line when the first watch fails, one when every watch works again.
  watchLost(kind, err) {
    const first = this.lost.size === 0;
    this.lost.add(kind);
    if (first) this.logger.warn(`kubernetes: lost ${this.client.server} (${kind}: ${err.message}); serving what it said last, retrying`);
  }

  watchBack(kind) {
    if (!this.lost.delete(kind) || this.lost.size > 0) return;
    this.logger.info(`kubernetes: ${this.client.server} answers again; watches resumed`);
  }

  schedule() {
    if (this.closed || this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      const step = () => this.apply();
      this.applying = this.applying.then(step, step).catch((err) => this.logger.error(`kubernetes: ${err.stack || err.message}`));
    }, COALESCE_MS);
  }

  make() {
    const snapshot = new Snapshot(Object.fromEntries(Object.entries(this.watches).map(([kind, watch]) => [kind, watch.objects])));
    return {
      snapshot,
      ...translate(snapshot, {
        gatewayClass: this.options.gatewayClass,
        gateway: this.options.gateway,
        ingressClass: this.options.ingressClass,
        addresses: this.addresses(snapshot),
        secretDir: this.secretDir
      })
    };
  }

  // What the status says lila is reached at: --publish-address, else the --publish-service's.
  addresses(snapshot) {
    const given = this.options.publishAddresses || [];
    if (given.length > 0 || this.options.publishService === undefined) return given;
    const service = snapshot.get('services', this.options.publishService);
    if (service === undefined) return [];
    const ingress = ((service.status || {}).loadBalancer || {}).ingress || [];
    const found = ingress.map((item) => item.ip || item.hostname).filter(Boolean);
    if (found.length > 0) return found;
    return (service.spec.clusterIPs || [service.spec.clusterIP]).filter((ip) => ip && ip !== 'None');
  }

  // One turn: the config made again, run when it changed, then the status written.
  async apply() {
    if (this.closed || this.service === null) return;
    const made = this.make();
    const filesChanged = this.writeFiles(made.files);
    if (made.text !== this.applied.text || filesChanged) {
      const result = await this.service.reloadText(made.text, 'kubernetes');
      if (result.ok) {
        this.applied = { ...this.applied, text: made.text, files: made.files, at: new Date(), error: null, reloads: this.applied.reloads + 1 };
      } else {
        // What runs stays; the Gateways say they are not programmed as asked, and why.
        this.applied = { ...this.applied, error: result.message };
        this.logger.error(`kubernetes: the configuration made of the cluster was refused: ${result.message}`);
      }
    }
    this.status = made.status;
    if (this.lease.leading) await this.writeStatus(made.snapshot, made.status);
  }

  async writeStatus(snapshot, status) {
    const writes = statusWrites(snapshot, this.refusedStatus(status));
    await Promise.all(writes.map(async (write) => {
      try {
        await this.client.patchStatus(write.path, write.status);
        this.statusWrites.done++;
      } catch (err) {
        this.statusWrites.failed++;
        // The object changed meanwhile: its watch brings it, and the next turn writes over it.
        if (err.reason !== 'Conflict' && err.reason !== 'NotFound') this.logger.warn(`kubernetes: cannot write the status of ${write.kind} ${write.key}: ${err.message}`);
      }
    }));
  }

  // A configuration lila refused to run leaves its Gateways not programmed, saying why.
  refusedStatus(status) {
    if (this.applied.error === null) return status;
    const gateways = new Map();
    for (const [key, value] of status.gateways) {
      gateways.set(key, {
        ...value,
        conditions: value.conditions.map((item) => (item.type === 'Programmed' ? { ...item, status: 'False', reason: 'Invalid', message: this.applied.error } : item))
      });
    }
    return { ...status, gateways };
  }

  // The Secrets' certificates as files the config names (0600, replaced whole); true when any changed.
  writeFiles(files) {
    let changed = false;
    for (const [file, content] of files) {
      const old = this.applied.files.get(file);
      if (old !== undefined && old.equals(content) && fs.existsSync(file)) continue;
      const temporary = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(temporary, content, { mode: 0o600 });
      fs.renameSync(temporary, file);
      changed = true;
    }
    for (const file of this.applied.files.keys()) {
      if (!files.has(file)) fs.rmSync(file, { force: true });
    }
    return changed;
  }

  /** `/status`'s `kubernetes`: the API server, each watch, the last configuration applied, the Lease. */
  view() {
    return {
      server: this.client.server,
      up: this.lost.size === 0,
      watches: Object.fromEntries(Object.entries(this.watches).map(([kind, watch]) => [kind, { state: watch.state, objects: watch.objects.size }])),
      applied_at: this.applied.at === null ? null : this.applied.at.toISOString(),
      reloads: this.applied.reloads,
      last_error: this.applied.error,
      leader: this.lease.leading,
      identity: this.lease.identity,
      status_writes: { ...this.statusWrites }
    };
  }

  /** `/metrics`' lila_kubernetes_* families. */
  metrics() {
    const lines = [
      '# HELP lila_kubernetes_up Whether every watch of the Kubernetes API server is up (1) or retrying (0).',
      '# TYPE lila_kubernetes_up gauge',
      `lila_kubernetes_up ${this.lost.size === 0 ? 1 : 0}`,
      '# HELP lila_kubernetes_objects The objects each watch holds.',
      '# TYPE lila_kubernetes_objects gauge',
      ...Object.entries(this.watches).map(([kind, watch]) => `lila_kubernetes_objects{kind="${kind}"} ${watch.objects.size}`),
      '# HELP lila_kubernetes_reloads_total Reloads run because the cluster\'s resources changed.',
      '# TYPE lila_kubernetes_reloads_total counter',
      `lila_kubernetes_reloads_total ${this.applied.reloads}`,
      '# HELP lila_kubernetes_leader Whether this lila holds the Lease and writes status (1) or not (0).',
      '# TYPE lila_kubernetes_leader gauge',
      `lila_kubernetes_leader ${this.lease.leading ? 1 : 0}`,
      '# HELP lila_kubernetes_status_writes_total Status writes, by outcome.',
      '# TYPE lila_kubernetes_status_writes_total counter',
      `lila_kubernetes_status_writes_total{outcome="done"} ${this.statusWrites.done}`,
      `lila_kubernetes_status_writes_total{outcome="failed"} ${this.statusWrites.failed}`
    ];
    return `${lines.join('\n')}\n`;
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    for (const watch of Object.values(this.watches)) watch.stop();
    await this.lease.stop().catch(() => {});
    this.client.close();
  }
}

module.exports = { KubernetesController, RESOURCES };
