'use strict';

const dgram = require('node:dgram');
const net = require('node:net');

const kCheck = Symbol('kCheck');

/**
 * A udp pool's active check of one backend: `payload` sent on a socket
 * connected to it; any answer passes; none within the check's timeout fails,
 * and so does an ICMP port unreachable (ECONNREFUSED on the connected socket).
 *
 * @param {import('../balancing/backend')} backend
 * @param {Buffer} payload `--health-payload`: an empty datagram by default
 * @param {number} timeout ms
 * @param {(err: Error | null) => void} done once, unless the probe is destroyed first
 * @returns {{destroy: () => void}} the probe
 */
function checkUdp(backend, payload, timeout, done) {
  const socket = dgram.createSocket(net.isIPv6(backend.host) ? 'udp6' : 'udp4');
  const probe = { socket, done, timer: null, destroyed: false, destroy: destroyProbe };
  socket[kCheck] = probe;
  socket.on('error', probeOnError);
  socket.on('message', probeOnMessage);
  probe.timer = setTimeout(probeOnTimeout, timeout, probe);
  socket.connect(backend.port, backend.host, (err) => {
    if (err) probeOnError.call(socket, err);
    else if (!probe.destroyed) socket.send(payload, (sendError) => {
      if (sendError) probeOnError.call(socket, sendError);
    });
  });
  return probe;
}

module.exports = { checkUdp };

function destroyProbe() {
  if (this.destroyed) return;
  this.destroyed = true;
  clearTimeout(this.timer);
  this.socket.close();
}

function probeOnMessage() {
  const probe = this[kCheck];
  if (!probe.destroyed) probe.done(null);
}

function probeOnError(err) {
  const probe = this[kCheck];
  if (!probe.destroyed) probe.done(err);
}

function probeOnTimeout(probe) {
  if (!probe.destroyed) probe.done(Object.assign(new Error('health check timed out'), { code: 'ETIMEDOUT' }));
}
