'use strict';

// Finagle's and Linkerd's default decay: an observation weighs half after ~7 s.
const DECAY_MS = 10000;

/**
 * Adds one response time to a backend's peak-EWMA latency (Finagle's
 * PeakEwma, as Linkerd uses it): a slower response replaces the average at
 * once (the peak), faster ones pull it down with an exponential decay over
 * time, so a backend that slows down is avoided immediately and trusted again
 * gradually.
 *
 * @param {import('./member').Member} backend its `latency` and `latencyAt` are written
 * @param {number} ms the response time
 * @param {number} now the current time in ms (a monotonic clock)
 */
function recordLatency(backend, ms, now) {
  const w = decayFactor(backend, now);
  const current = backend.latency * w;
  backend.latency = ms > current ? ms : current + ms * (1 - w);
  backend.latencyAt = now;
}

/**
 * A backend's peak-EWMA latency as of `now`: it decays towards zero while no
 * response is seen, so an avoided backend gets tried again eventually.
 *
 * @param {import('./member').Member} backend
 * @param {number} now
 * @returns {number} ms; 0 before the first response
 */
function currentLatency(backend, now) {
  return backend.latency * decayFactor(backend, now);
}

module.exports = { recordLatency, currentLatency };

function decayFactor(backend, now) {
  const elapsed = now - backend.latencyAt;
  return elapsed > 0 ? Math.exp(-elapsed / DECAY_MS) : 1;
}
