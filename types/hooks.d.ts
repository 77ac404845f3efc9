// Types of lila's hooks: a module that `--hook FILE` names, or the functions
// `createService({ hooks })` takes. doc/hooks.md is the chapter.
//
// In a hook written in JavaScript:
//   /** @type {import('lila-lb/types/hooks').OnRequest} */
//   exports.onRequest = (req, ctx) => { ... };
// In TypeScript:
//   import type { OnRequest } from 'lila-lb/types/hooks';

/// <reference types="node" />

import type { Duplex, Readable } from 'node:stream';

/**
 * The request's fields as its backend would get them (the route's
 * `--request-header` edits and lila's `X-Forwarded-*` and `Forwarded`
 * included): lower-case names, string values (a field sent several times is
 * one string, its values joined with `, `; `cookie`'s with `; `). Set a name
 * to a string (from JavaScript, an array of strings is taken too: one field
 * each); `delete` a name (or set it to `undefined`) to remove the field.
 * Only what a hook changed is applied, after the route's own edits.
 *
 * The fields that frame a message are lila's: setting `content-length`,
 * `transfer-encoding`, `connection`, `upgrade`, `te` or `keep-alive`, a name
 * that is no token, or a value holding CR, LF or NUL is a hook error (500).
 */
export interface RequestHeaders {
  [name: string]: string | undefined;
  /** `Host`, or an h2 request's `:authority`. */
  host?: string;
  /** Every `Cookie` field of the request in one string, joined with `; `. */
  cookie?: string;
  authorization?: string;
  'user-agent'?: string;
  'x-forwarded-for'?: string;
}

/**
 * The response's fields, after the route's response edits
 * (`--response-header`, `--hsts`, `--cors`, `Location` prefixes):
 * lower-case names, string values, but `set-cookie`, always an array of
 * strings. Set a name to a string or an array of strings (several fields),
 * `delete` a name (or set it to `undefined`) to remove the field; only what
 * a hook changed is applied.
 * `content-length`, `transfer-encoding` and `connection` are lila's: setting
 * them, a name that is no token or a value holding CR, LF or NUL is a hook
 * error (500).
 */
export interface ResponseHeaders {
  [name: string]: string | string[] | undefined;
  /** Always an array: one string for each `Set-Cookie` field. */
  'set-cookie'?: string[];
  'content-type'?: string;
  'content-encoding'?: string;
  'cache-control'?: string;
  /** A transform makes a strong `ETag` weak (`W/"..."`). */
  etag?: string;
  location?: string;
}

/** The TLS side of a request over HTTPS: `req.tls`. */
export interface HookTls {
  /** The name the client asked for (SNI), or `null` when it sent none. */
  readonly servername: string | null;
  /** The protocol ALPN chose: `h2` or `http/1.1`; `null` when the client offered none. */
  readonly alpn: string | null;
  /**
   * The subject of the client's verified certificate (`CN=alice,O=Example`),
   * with `--tls-client-ca`; `null` when the client gave none.
   */
  readonly certificate: string | null;
}

/** The client of a request: `req.client`. */
export interface HookClient {
  /** Its address (with `--accept-proxy`, the PROXY header's), as access lines give it. */
  readonly address: string;
  readonly port: number;
}

/** The request an `onRequest` hook gets: `req`. */
export interface HookRequest {
  /** `GET`, `POST`... */
  readonly method: string;
  /**
   * Path and query (`/users/42?tab=1`) as the backend would get them: after
   * the route's path edits (`--strip-prefix`, `--add-prefix`, `--rewrite`).
   * Set it to send another: the backend, `--root`'s files and `--cache`'s
   * key take the new one. It must start with `/` and hold no space, CR, LF
   * or NUL, else the request is a hook error (500).
   */
  path: string;
  /**
   * The `Host` field (or h2's `:authority`) as the client sent it, port
   * included; `undefined` without one.
   */
  readonly host: string | undefined;
  /** The request's fields: read, set, delete (see {@link RequestHeaders}). */
  readonly headers: RequestHeaders;
  /** Who sent the request. */
  readonly client: HookClient;
  /** `null` over plain HTTP. */
  readonly tls: HookTls | null;
}

/**
 * The response `onResponse` gets, and `transformResponse` reads: the
 * backend's answer, or one lila made on its way (a file under `--root`, a
 * cache hit, onRequest's own answer); never lila's error answers (502, 504...).
 */
export interface HookResponse {
  /**
   * The status, 200 to 599. Writable in `onResponse`; an answer with a body
   * may not be given 204 or 304 (a hook error, 500).
   */
  status: number;
  /** The response's fields (see {@link ResponseHeaders}); writable in `onResponse`. */
  readonly headers: ResponseHeaders;
}

/** What `transformResponse` gets: the response after `onResponse`, read-only. */
export interface HookResponseView {
  readonly status: number;
  readonly headers: Readonly<ResponseHeaders>;
}

/**
 * The context every hook of a request gets: `ctx`. `State` is what the
 * hooks keep in `ctx.state`.
 */
export interface HookContext<State extends object = Record<string, any>> {
  /**
   * The name of the pool that serves this request: the route's, or the one
   * a split picked; `null` on a route without a pool (`--root` alone).
   * Writable in `onRequest` only (see {@link RequestContext}): setting it in
   * `onResponse` or `transformResponse` is a hook error (500).
   */
  readonly pool: string | null;
  /** The route's match as written (`example.com/api`, `*`), as access lines name it. */
  readonly route: string;
  /**
   * An object of this request's own, the same for its `onRequest`,
   * `onResponse` and `transformResponse`: what one hook leaves for the next.
   */
  readonly state: State;
  /**
   * Writes one line to lila's log at level info, with the request's client:
   * `hook <file>: <values joined by a space>` (objects as `console.log`
   * writes them).
   */
  log(...values: unknown[]): void;
}

/** The context `onRequest` gets: `ctx.pool` may be changed there. */
export interface RequestContext<State extends object = Record<string, any>>
  extends HookContext<State> {
  /**
   * The name of the pool that serves this request (`null`: the route has
   * none). Set it to another pool of the config (an http one) to send the
   * request there; a name the config does not define is a hook error (500).
   */
  pool: string | null;
}

/**
 * What `onRequest` returns to answer the request itself, without a
 * backend. The answer goes through the route's response header edits,
 * `onResponse`, `transformResponse` and `--compress` as a backend's would.
 */
export interface HookAnswer {
  /** The status; 200 when absent. */
  status?: number;
  /** The answer's fields by name: a string, or an array of strings for several fields. */
  headers?: Record<string, string | string[]>;
  /**
   * The body: a string (UTF-8; `text/plain; charset=utf-8` unless `headers`
   * gives a `content-type`), a Buffer or Uint8Array (sent with
   * `Content-Length`), or a readable stream, Node's or a WHATWG one (sent as
   * it is read: chunked to HTTP/1.1 clients, DATA frames to h2 ones).
   * Absent: empty.
   */
  body?: string | Uint8Array | Readable | ReadableStream<Uint8Array>;
}

/** What a hook may return: the value, or a promise of it (the wait bounded by `--hook-timeout`). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Runs for each request of the route, before lila answers it with a file
 * (`--root`), the cache (`--cache`) or the pool, and after the route's access
 * control, fixed answers and request edits. Change `req.path`, `req.headers`
 * or `ctx.pool`, then return nothing to go on; or return a
 * {@link HookAnswer} to answer without a backend. Async: past
 * `--hook-timeout` (1s) the client gets 504 and the request goes nowhere.
 * A throw or a rejection: 500, logged, never sent to the client.
 */
export type OnRequest<State extends object = Record<string, any>> =
  (req: HookRequest, ctx: RequestContext<State>) =>
    MaybePromise<HookAnswer | null | undefined | void>;

/**
 * Runs for each answer of the route (the backend's, a file's, a cache
 * hit's, onRequest's own; not lila's errors), after the route's response
 * header edits: change `res.status` and `res.headers`. Async: past
 * `--hook-timeout` the client gets 504.
 */
export type OnResponse<State extends object = Record<string, any>> =
  (res: HookResponse, ctx: HookContext<State>) => MaybePromise<void>;

/**
 * Runs after `onResponse` for each answer with a body (not HEAD, 204 or
 * 304): return a stream the body flows through as it arrives (a Node
 * `stream.Transform`, or any Duplex, or a WHATWG `TransformStream`), or
 * nothing to leave the body as it is. With a transform, `Content-Length` is
 * dropped and a strong `ETag` made weak; `--compress` then compresses its
 * output. A transform that fails mid-body cuts the answer short (logged).
 */
export type TransformResponse<State extends object = Record<string, any>> =
  (res: HookResponseView, ctx: HookContext<State>) =>
    MaybePromise<Duplex | TransformStream<Uint8Array, Uint8Array> | null | undefined | void>;

/**
 * A hook module's exports (named exports, or a default export /
 * `module.exports` object), and what `createService({ hooks })` takes (the
 * hook of every http route that names no `--hook` of its own). Any of the
 * three; a module with none of them is refused at load.
 */
export interface Hooks<State extends object = Record<string, any>> {
  onRequest?: OnRequest<State>;
  onResponse?: OnResponse<State>;
  transformResponse?: TransformResponse<State>;
}
