'use strict';

const { createRedirectServer } = require('../tls/redirect-server');
const { formatHostPort, peerAddressOf } = require('../net/address');
const { layerOf } = require('../layers');
const { LilaError, codes } = require('../errors');

/**
 * Opens a plan's new listeners (and their http→https redirects), before it
 * is swapped in. A listener on the address of a leaving one takes its
 * socket over; on its port and another address, it opens once that one has
 * stopped accepting. Those come last, and takeovers just before them, so
 * that a port that cannot be opened changes nothing: what was opened is
 * closed again (a socket taken over goes back), and the plan's new pools close.
 *
 * @param {import('./configuration')} configuration what runs
 * @param {object} plan prepared
 * @param {object[]} leaving the running listeners the plan drops
 * @param {boolean} reusePort a socket of this process's own, bound with SO_REUSEPORT (a worker)
 * @returns {Promise<void>}
 * @throws {LilaError} `LILA_ERR_LISTEN`
 */
async function openListeners(configuration, plan, leaving, reusePort) {
  const opened = [];
  const holderOf = (item) => item.spec.port === 0 ? undefined
    : leaving.find((other) => other.spec.port === item.spec.port && sameTransport(other.spec, item.spec) && other.listener.address() !== null);
  const order = (item) => {
    const holder = holderOf(item);
    return holder === undefined ? 0 : takesOver(holder, item) ? 1 : 2;
  };
  const fresh = plan.listeners.filter((item) => item.running === null).sort((a, b) => order(a) - order(b));
  try {
    for (const item of fresh) {
      const holder = holderOf(item);
      if (holder !== undefined && takesOver(holder, item)) {
        item.address = await item.listener.takeOver(holder.listener);
        item.tookOver = holder;
      } else {
        if (holder !== undefined) await holder.listener.stopAccepting();
        item.address = await item.listener.listen(item.spec.port, item.spec.host, { reusePort });
      }
      opened.push(item);
      if (item.spec.redirectHttp !== undefined) item.redirect = await redirectFor(configuration, item, leaving);
    }
  } catch (err) {
    for (const item of opened) {
      // What was taken over goes back to the listener it came from, which goes on as before.
      if (item.tookOver !== undefined) await item.tookOver.listener.takeOver(item.listener);
      item.listener.close();
      if (item.redirectFrom !== undefined) item.redirectFrom.redirect = item.redirect;
      else if (item.redirect) item.redirect.close();
    }
    for (const pool of plan.made) pool.close();
    throw err;
  }
}

module.exports = { openListeners, redirectAddress };

// Where a listener's --redirect-http answers: its server's address once open, else as the model says.
function redirectAddress(spec, server) {
  if (spec.redirectHttp === undefined || spec.redirectHttp === null) return null;
  const address = server === null || server === undefined ? null : server.address();
  if (address !== null && typeof address === 'object') return formatHostPort(address.address, address.port);
  const { host, port } = spec.redirectHttp;
  return host === undefined ? String(port) : formatHostPort(host, port);
}

// The http→https redirect of a new listener: a leaving listener's, when it
// answers on the same address for the same port; else a new one, once a
// leaving one on its port has closed.
async function redirectFor(configuration, item, leaving) {
  const where = item.spec.redirectHttp;
  const holder = leaving.find((other) => other.redirect !== null && other.spec.redirectHttp.port === where.port);
  if (holder !== undefined) {
    const redirect = holder.redirect;
    if (holder.spec.redirectHttp.host === where.host && holder.address.port === item.address.port) {
      holder.redirect = null;
      item.redirectFrom = holder;
      return redirect;
    }
    await stopAccepting(redirect);
  }
  const { logger, acme, traffic } = configuration;
  // Its requests are counted and have their access lines as lila's own answers.
  const answered = (request, status, ms) => traffic.refused(status, ms, request, peerAddressOf(request.socket), request.socket);
  return listenRedirect(where, item.address.port, logger, acme === null ? null : acme.challenges, answered);
}

// Whether two listeners' ports are of one transport: a udp port is not a tcp one.
function sameTransport(a, b) {
  return layerOf(a.layer)?.datagrams === layerOf(b.layer)?.datagrams;
}

// Whether `item` takes the socket of `holder`, a leaving listener on its port.
function takesOver(holder, item) {
  return holder.spec.host === item.spec.host && holder.listener.handsOver;
}

function stopAccepting(server) {
  return new Promise((resolve) => {
    server.close();
    // close() stops accepting at once; 'listening' is false from then on.
    setImmediate(resolve);
  });
}

function listenRedirect(where, httpsPort, logger, challenges, answered) {
  // With --acme it answers HTTP-01 too, as every plain listener does.
  const server = createRedirectServer(httpsPort, logger, challenges, answered);
  return new Promise((resolve, reject) => {
    server.once('error', (err) => {
      reject(new LilaError(codes.LISTEN, `cannot listen on ${formatHostPort(where.host === undefined ? '::' : where.host, where.port)} for the http redirect: ${err.code || err.message}`));
    });
    server.listen(where.port, where.host, () => resolve(server));
  });
}
