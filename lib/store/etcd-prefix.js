'use strict';

/**
 * What a `Follower` (`follow.js`) follows of an etcd prefix: its keys read at
 * one revision, a watch from the next, and a compacted revision as the watch's
 * error that makes it read again.
 *
 * @param {{getPrefix: Function, watch: Function}} client an `EtcdClient`
 * @param {string} prefix
 * @returns {import('./follow').FollowSource} `read` resolves with `{kvs, revision}`; the watch's events are
 *   lists of `{type, key, value, modRevision}`, each with the revision it brings
 */
function prefixSource(client, prefix) {
  return {
    read: () => client.getPrefix(prefix),
    watch: (revision, on) => client.watch(prefix, { prefix: true, fromRevision: revision + 1 }, { events: on.events, error: on.error }),
    compacted: (err) => err.compactRevision !== undefined
  };
}

module.exports = { prefixSource };
