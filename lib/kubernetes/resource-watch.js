'use strict';

const { EventEmitter } = require('node:events');
const { Follower } = require('../store/follow');

const BACKOFF_FIRST_MS = 200;
const BACKOFF_MAX_MS = 5000;
// A resource the API does not serve (its CRD not installed) is asked for again this often.
const ABSENT_EVERY_MS = 30000;
// The follower's states, as this watch names them.
const STATES = { reading: 'listing', watching: 'watching', waiting: 'retrying', absent: 'absent' };

/**
 * The objects of one resource, kept in memory as the API changes them by a
 * `Follower` (lib/store/follow.js): a list, then a watch from the list's
 * resourceVersion, resumed from the last version seen (bookmarks included)
 * when it drops, and a whole list again when that version is gone (410).
 * Emits `change` after each event applied or list taken (the reader
 * coalesces), `lost` (err) once when it starts failing and `back` once it
 * works again. A resource the API answers 404 for is `absent`: asked for
 * again every 30 s, quietly.
 */
class ResourceWatch extends EventEmitter {
  /**
   * @param {import('./kube-client').KubeClient} client
   * @param {string} path the collection, e.g. `/apis/gateway.networking.k8s.io/v1/httproutes`, `/api/v1/services`
   * @param {object} [options]
   * @param {number} [options.backoffMs] the first wait after a failure, doubled up to `maxBackoffMs` (200)
   * @param {number} [options.maxBackoffMs] (5000)
   * @param {number} [options.absentEveryMs] how often an absent resource is asked for (30000)
   * @param {number} [options.timeoutSeconds] the watches' own, else the client's choice
   */
  constructor(client, path, { backoffMs = BACKOFF_FIRST_MS, maxBackoffMs = BACKOFF_MAX_MS, absentEveryMs = ABSENT_EVERY_MS, timeoutSeconds } = {}) {
    super();
    this.client = client;
    this.path = path;
    /** @type {Map<string, object>} 'namespace/name' (a cluster-scoped object: 'name') -> object */
    this.objects = new Map();
    let resolve;
    /** Settles once the first list is taken, or the resource found absent (or the watch stopped). */
    this.synced = new Promise((r) => {
      resolve = r;
    });
    this._resolveSynced = resolve;
    this._follower = new Follower(resourceSource(client, path, { absentEveryMs, timeoutSeconds }), {
      read: ({ items }) => {
        // The same Map, filled anew: a reader may hold it.
        this.objects.clear();
        for (const object of items) this.objects.set(keyOf(object), object);
        this._resolveSynced();
        this.emit('change');
      },
      events: (event) => this._apply(event),
      up: (again) => {
        if (again) this.emit('back');
      },
      lost: (err) => this.emit('lost', err),
      absent: () => {
        const had = this.objects.size > 0;
        this.objects.clear();
        this._resolveSynced();
        if (had) this.emit('change');
      }
    }, { resume: true, firstWaitMs: backoffMs, maxWaitMs: maxBackoffMs });
  }

  /** @returns {'listing' | 'watching' | 'retrying' | 'absent'} */
  get state() {
    return STATES[this._follower.state];
  }

  /** @returns {string} the version the objects are at ('' before the first list) */
  get resourceVersion() {
    return this._follower.revision === null ? '' : String(this._follower.revision);
  }

  /** @returns {Error | null} the last failure, null once it works again */
  get lastError() {
    return this._follower.lastError;
  }

  /**
   * Lists, then watches (once: a watch stopped does not start again).
   *
   * @returns {this}
   */
  start() {
    this._follower.start();
    return this;
  }

  /** Ends the watch; no event is emitted after. */
  stop() {
    this._follower.close();
    this._resolveSynced();
  }

  _apply({ type, object }) {
    if (type === 'BOOKMARK') return;
    if (type === 'ADDED' || type === 'MODIFIED') this.objects.set(keyOf(object), object);
    else if (type === 'DELETED') this.objects.delete(keyOf(object));
    else return;
    this.emit('change');
  }
}

/**
 * An object's key in `objects`: 'namespace/name', or 'name' for a cluster-scoped one.
 *
 * @param {{metadata?: {namespace?: string, name?: string}}} object
 * @returns {string}
 */
function keyOf(object) {
  const { namespace, name } = (object && object.metadata) || {};
  return namespace ? `${namespace}/${name}` : String(name);
}

module.exports = { ResourceWatch, keyOf };

// What the follower reads and watches of one resource: its list, and a watch from a resourceVersion.
function resourceSource(client, path, { absentEveryMs, timeoutSeconds }) {
  return {
    read: async () => {
      const answer = await client.list(path);
      return { items: answer.items, revision: answer.resourceVersion };
    },
    watch: (resourceVersion, on) => client.watch(path, {
      resourceVersion,
      timeoutSeconds,
      onOpen: on.opened,
      onEvent: (event) => on.events(event, event.object && event.object.metadata && event.object.metadata.resourceVersion),
      onError: on.error,
      // The server's own end of a watch: resumed at once.
      onClose: on.ended
    }),
    // Too old a version: only a whole list says what changed since. A 404: the resource went away with its CRD, as the list says.
    compacted: (err) => err.gone === true || err.status === 404,
    absent: (err) => (err.status === 404 ? absentEveryMs : null)
  };
}
