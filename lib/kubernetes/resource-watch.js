'use strict';

const { EventEmitter } = require('node:events');

const BACKOFF_FIRST_MS = 200;
const BACKOFF_MAX_MS = 5000;
// A resource the API does not serve (its CRD not installed) is asked for again this often.
const ABSENT_EVERY_MS = 30000;

/**
 * The objects of one resource, kept in memory as the API changes them: a
 * list, then a watch from the list's resourceVersion, resumed from the last
 * version seen (bookmarks included) when it drops, and a whole list again
 * when that version is gone (410). Emits `change` after each event applied or
 * list taken (the reader coalesces), `lost` (err) once when it starts
 * failing and `back` once it works again. A resource the API answers 404 for
 * is `absent`: asked for again every 30 s, quietly.
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
    /** @type {'listing' | 'watching' | 'retrying' | 'absent'} */
    this.state = 'listing';
    /** The version the objects are at ('' before the first list). */
    this.resourceVersion = '';
    /** @type {Error | null} the last failure, null once it works again */
    this.lastError = null;
    this._options = { backoffMs, maxBackoffMs, absentEveryMs, timeoutSeconds };
    this._failures = 0;
    this._gone = false;
    this._lost = false;
    this._started = false;
    this._stopped = false;
    this._timer = null;
    this._watch = null;
    let resolve;
    /** Settles once the first list is taken, or the resource found absent (or the watch stopped). */
    this.synced = new Promise((r) => {
      resolve = r;
    });
    this._resolveSynced = resolve;
  }

  /**
   * Lists, then watches (once: a watch stopped does not start again).
   *
   * @returns {this}
   */
  start() {
    if (this._started || this._stopped) return this;
    this._started = true;
    this._list();
    return this;
  }

  /** Ends the watch; no event is emitted after. */
  stop() {
    this._stopped = true;
    clearTimeout(this._timer);
    if (this._watch !== null) this._watch.close();
    this._watch = null;
    this._resolveSynced();
  }

  async _list() {
    if (this.state !== 'absent') this.state = 'listing';
    let answer;
    try {
      answer = await this.client.list(this.path);
    } catch (err) {
      if (this._stopped) return;
      if (err.status === 404) return this._absent(err);
      return this._fail(err, () => this._list());
    }
    if (this._stopped) return;
    // The same Map, filled anew: a reader may hold it.
    this.objects.clear();
    for (const object of answer.items) this.objects.set(keyOf(object), object);
    this.resourceVersion = answer.resourceVersion;
    this._works();
    this._startWatch();
    this._resolveSynced();
    this.emit('change');
  }

  _absent(err) {
    this.state = 'absent';
    this._works();
    this.lastError = err;
    this.resourceVersion = '';
    const had = this.objects.size > 0;
    this.objects.clear();
    this._resolveSynced();
    if (had) this.emit('change');
    this._timer = setTimeout(() => this._list(), this._options.absentEveryMs);
  }

  _startWatch() {
    this.state = 'watching';
    this._watch = this.client.watch(this.path, {
      resourceVersion: this.resourceVersion,
      timeoutSeconds: this._options.timeoutSeconds,
      onOpen: () => this._works(),
      onEvent: (event) => this._apply(event),
      onError: (err) => {
        this._watch = null;
        if (this._stopped) return;
        // Too old a version: only a whole list says what changed since.
        if (err.gone) return this._relist(err);
        // The resource went away with its CRD: the list says so.
        if (err.status === 404) return this._list();
        // A watch cut says nothing of its list's version: a Gone after it lists again at once.
        this._gone = false;
        this._fail(err, () => this._startWatch());
      },
      // The server's own end of a watch: resumed at once.
      onClose: () => {
        this._watch = null;
        this._gone = false;
        if (!this._stopped) this._startWatch();
      }
    });
  }

  _relist(err) {
    this.lastError = err;
    this.resourceVersion = '';
    // Gone again before any event of the watch after a list: waits like a failure, not to loop.
    if (this._gone) return this._fail(err, () => this._list());
    this._gone = true;
    this._list();
  }

  _apply({ type, object }) {
    this._gone = false;
    const version = object && object.metadata && object.metadata.resourceVersion;
    if (version) this.resourceVersion = String(version);
    if (type === 'BOOKMARK') return;
    if (type === 'ADDED' || type === 'MODIFIED') this.objects.set(keyOf(object), object);
    else if (type === 'DELETED') this.objects.delete(keyOf(object));
    else return;
    this.emit('change');
  }

  _fail(err, retry) {
    this.state = 'retrying';
    this.lastError = err;
    const wait = Math.min(this._options.backoffMs * 2 ** this._failures, this._options.maxBackoffMs);
    this._failures++;
    if (!this._lost) {
      this._lost = true;
      this.emit('lost', err);
    }
    this._timer = setTimeout(retry, wait);
  }

  // The API answered as it should: the waits start over, and a loss is over.
  _works() {
    this._failures = 0;
    this.lastError = null;
    if (this._lost) {
      this._lost = false;
      this.emit('back');
    }
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
