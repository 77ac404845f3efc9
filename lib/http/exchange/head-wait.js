'use strict';

const { LilaError } = require('../../errors');

/**
 * A response head an observer takes its time over (a hook's async
 * `onResponse`), or refuses: the fast engine's relay holds the answer
 * meanwhile. The upstream is paused; the body pieces already read wait,
 * in order, and a local answer's whole body waits to be started. Once the
 * fields are known the head goes out, then the pieces, then reading goes
 * on; a refusal (a `LilaError`: the hook failed, or took too long) is
 * lila's own answer instead, nothing of the backend's having been sent.
 *
 * @param {import('./response-relay').ResponseRelay} relay
 * @param {LilaError | Promise<string[] | LilaError>} observed what `observeResponseHead` gave
 * @param {object} head the response head
 * @param {boolean} keepAlive
 */
function awaitHead(relay, observed, head, keepAlive) {
  if (observed instanceof LilaError) {
    refuseAnswer(relay, observed);
    return;
  }
  const wait = { chunks: [], local: null };
  relay.headWait = wait;
  if (relay.upstream !== null) relay.upstream.pause();
  observed.then((headers) => {
    relay.headWait = null;
    if (relay.done) return;
    if (headers instanceof LilaError) {
      refuseAnswer(relay, headers);
      return;
    }
    relay.sendHead(head, headers, keepAlive);
    for (const chunk of wait.chunks) if (!relay.responseDone && !relay.done) relay.relayBody(chunk, 0);
    if (relay.prefix !== null) relay.emitPrefix();
    if (wait.local !== null) wait.local.start();
    else if (relay.upstream !== null && !relay.done && !relay.clientFull()) relay.upstream.resume();
  });
}

/**
 * A body piece read while the head waits: kept, in order.
 *
 * @param {import('./response-relay').ResponseRelay} relay
 * @param {Buffer} chunk
 * @param {number} start
 */
function holdWhileHeadWaits(relay, chunk, start) {
  relay.headWait.chunks.push(relay.kept(start === 0 ? chunk : chunk.subarray(start)));
}

module.exports = { awaitHead, holdWhileHeadWaits };

// The answer is refused before its head went out: lila's own answer, the backend's connection not reused.
function refuseAnswer(relay, error) {
  relay.reusable = false;
  relay.fail(error, `the answer's head: ${error.message}`);
}
