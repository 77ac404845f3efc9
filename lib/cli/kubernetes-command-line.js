'use strict';

const { connectionOf } = require('../kubernetes/kubeconfig');
const { defaultStateDir } = require('../acme/state-store');
const { LilaError, codes } = require('../errors');

const KUBERNETES_OPTIONS = ['kubeconfig', 'kube-context', 'gateway-class', 'gateway', 'ingress-class', 'publish-address', 'publish-service'];

/**
 * `--kubernetes` on the command line: what a `KubernetesController` is made with (the API
 * server and its credentials, from the pod's service account or a kubeconfig; which classes
 * and Gateways to serve; what status says lila is reached at), or null without it.
 *
 * @param {object} options the command line's, read
 * @param {NodeJS.ProcessEnv} env KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT, POD_NAME, POD_NAMESPACE
 * @returns {object | null}
 * @throws {LilaError} a usage error: an option of --kubernetes without it, a kubeconfig that cannot be used
 */
function kubernetesOf(options, env) {
  if (options.kubernetes !== true) {
    const stray = KUBERNETES_OPTIONS.find((name) => options[name] !== undefined);
    if (stray !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${stray}" goes with --kubernetes`);
    return null;
  }
  for (const [name, why] of [['workers', 'run one lila per pod, as many pods as you need'], ['acme', 'certificates come from the Gateways\' Secrets (cert-manager writes them)'], ['store', 'the cluster is the store']]) {
    if (options[name] !== undefined) throw new LilaError(codes.INVALID_OPTION, `"--${name}" does not go with --kubernetes: ${why}`);
  }
  const publishService = options['publish-service'];
  if (publishService !== undefined && !/^[^/\s]+\/[^/\s]+$/.test(publishService)) {
    throw new LilaError(codes.INVALID_OPTION, `"--publish-service" must be NAMESPACE/NAME, received ${JSON.stringify(publishService)}`);
  }
  // Inside a pod without --kubeconfig, its service account; else the kubeconfig, as kubectl reads it.
  const inCluster = options.kubeconfig === undefined && options['kube-context'] === undefined && env.KUBERNETES_SERVICE_HOST ? true : undefined;
  let connection;
  try {
    connection = connectionOf({ kubeconfig: options.kubeconfig, context: options['kube-context'], env, inCluster });
  } catch (err) {
    if (!(err instanceof LilaError)) throw err;
    throw new LilaError(codes.INVALID_OPTION, err.message);
  }
  return {
    connection,
    gatewayClass: options['gateway-class'],
    gateway: options.gateway,
    ingressClass: options['ingress-class'],
    publishAddresses: options['publish-address'] || [],
    publishService,
    stateDir: options['state-dir'] || defaultStateDir(),
    identity: env.POD_NAME || undefined,
    leaseNamespace: env.POD_NAMESPACE || undefined
  };
}

module.exports = { kubernetesOf };
