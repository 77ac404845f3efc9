'use strict';

const os = require('node:os');
const Logger = require('../ops/logger');
const { MIN_VERSIONS } = require('../tls/certificate-store');
const { CLIENT_VERIFY_MODES } = require('../tls/client-verification');
const { validateCiphers, validateCurves } = require('../tls/profile');
const { validateChoice, validateCount, validateDuration, validatePath, validatePort, validateResolvers, validateDirectory, validateFile, validateNames, validateCacheDir } = require('./validate');
const { parseRateLimit, parseRateLimitName, validateSize, parseSticky } = require('./traffic-values');
const { parseMirror } = require('./mirror-values');
const { OTLP_PROTOCOLS, parseOtlpEndpoint, parseOtlpHeaders, parseServiceName, parseTraceSample } = require('./tracing-values');
const { DEFAULTS, DEFAULT_DRAIN_MS, LAYERS, HTTP_ENGINES, H2_ENGINES, HOST_HEADERS, SEND_PROXY_VERSIONS } = require('./defaults');
const { closest, didYouMean } = require('./suggest');
const { parseStoreUrl } = require('../store/store-url');
const { parseRedisUrl } = require('../store/redis-url');
const { parseHashKey } = require('../balancing/strategies/hash-key');
const { parseTsigKey } = require('../dns/tsig');
const { parseHealthPayload } = require('./health-payload');
const { LilaError, codes } = require('../errors');

const MAX_WORKERS = 256;

/**
 * Every command-line option, once: `parseArgs`, validation, `--help` and
 * README's option reference are all made from this table.
 *
 * - `name`, `short`: the long and the one-letter name
 * - `arg`: what the value looks like in the help (`<n>`); none for a flag
 * - `group`: the section of `--help` it is listed in (see `GROUPS`)
 * - `help`: one sentence, the same in `--help` and README
 * - `default`: the default as the user reads it; '' for none
 * - `read(text, flag)`: checks the value and returns it as the library wants it
 *   (absent options are not read: the library's defaults apply)
 * - `key`: the `createProxy` option it sets, if it is one
 * - `multiple`: it may be given more than once; its value is then a list
 * - `alias`: another name of that option (another tool's spelling); giving both is a mistake
 * - `action`: the route action it sets (`RouteActions`), if it is one
 * - `words`: it takes several words after its name, from `min` to `max`, a word past `min`
 *   only when `more` matches it (`--respond 200 ok`); its value is then the list of words
 * - `scope`: where the config file takes it: `global` (a line of its own), `pool` (a pool's
 *   lines), `listener` (a listen line's), `layer` (both), `route` (a route line's, a listen line's for its
 *   routes, and the command line's for its one route), `listener-route` (a listen line's, for the listener's own, or a
 *   route line's, for that route's own; the command line's is its listener's), `command` (the command line only)
 * - `reloads`: a global option a reload of the config file applies; the others are read at start
 * - `layers`: the layers (layers/) a pool or listener option acts in, when not every one: given to a pool
 *   or listener of another layer, it is ignored with a warning (`layer-options.js`), unless that layer's
 *   code refuses it (`--sticky` on tcp); route options act where a layer's `takesRouteOptions`
 *
 * @type {{name: string, short?: string, arg?: string, group: string, scope: string, help: string, default: string,
 *   read?: (text: string, flag: string) => unknown, key?: string, multiple?: boolean, alias?: string, reloads?: boolean,
 *   layers?: string[]}[]}
 */
const OPTIONS = [
  {
    name: 'config', short: 'c', arg: '<file>', group: 'servers', scope: 'command', default: '',
    help: 'read pools, listeners and routes from this file (the command line written as lines); with no mode, ' +
      'server or --hosts given, ./lila.conf is read if it exists'
  },
  {
    name: 'check', group: 'servers', scope: 'command', default: '',
    help: 'check the config file (certificates included), print a line per listener and exit: 0 when it is good, 2 when not'
  },
  {
    name: 'hosts', arg: '<file>', group: 'servers', scope: 'command', default: '',
    help: 'read the servers from this file, one a line; with no server given, ./hosts is read if it exists'
  },
  {
    name: 'watch', group: 'servers', scope: 'global', default: 'off',
    help: 'reload the hosts file or the config file, and the certificates, when they change (SIGHUP always does); ' +
      'an invalid file keeps what runs'
  },
  {
    name: 'resolver', arg: '<ip[:port],...>', group: 'dns', scope: 'global', reloads: true, default: '/etc/resolv.conf', key: 'resolvers',
    help: "the DNS servers resolve and srv: servers ask, e.g. 127.0.0.1:8600 for Consul's DNS",
    read: validateResolvers
  },
  {
    name: 'resolve-interval', arg: '<t>', group: 'dns', scope: 'pool', default: ms(DEFAULTS.resolveInterval), key: 'resolveInterval',
    help: 'the longest time between two lookups of a name; they follow the TTL of its answer, at least 1s apart',
    read: (text, flag) => validateDuration(text, flag, { min: 1000 })
  },
  {
    name: 'accept-proxy', group: 'proxy', scope: 'listener', layers: ['http', 'tcp'], default: 'off', key: 'acceptProxy',
    help: 'every client connection must start with a PROXY protocol header (v1 or v2), whose client address ' +
      'lila then uses everywhere; one without it is closed'
  },
  {
    name: 'send-proxy', arg: '<v1|v2>', group: 'proxy', scope: 'pool', layers: ['http', 'tcp'], default: 'off', key: 'sendProxy',
    help: 'send every backend a PROXY protocol header first, naming the client (a server\'s send-proxy or ' +
      'send-proxy-v2 chooses for itself)',
    read: (text, flag) => validateChoice(text, SEND_PROXY_VERSIONS, flag)
  },
  {
    name: 'port', short: 'p', arg: '<n>', group: 'general', scope: 'command', default: String(DEFAULTS.port),
    help: 'port to listen on; 0 picks a free one', read: validatePort
  },
  {
    name: 'address', short: 'a', arg: '<addr>', group: 'general', scope: 'command', default: 'all interfaces',
    help: 'address to listen on', read: notEmpty
  },
  {
    name: 'layer', short: 'l', arg: `<${LAYERS.join('|')}>`, group: 'general', scope: 'layer', default: DEFAULTS.layer, key: 'layer',
    help: 'http (or layer7): balance every request, keep-alive to backends; tcp (or layer4): pass bytes through unchanged, any protocol; ' +
      'udp: relay datagrams, a flow per client address and port',
    read: layer
  },
  {
    name: 'connect-timeout', arg: '<t>', group: 'general', scope: 'pool', layers: ['http', 'tcp'], default: ms(DEFAULTS.connectTimeout), key: 'connectTimeout',
    help: 'time to connect to a backend before trying the next', read: duration
  },
  {
    name: 'drain-timeout', arg: '<t>', group: 'general', scope: 'global', default: ms(DEFAULT_DRAIN_MS),
    help: 'on SIGTERM or SIGINT, time for requests and connections in flight to finish; a second signal stops at once',
    read: durationOrZero
  },
  {
    name: 'hash-key', arg: '<key>', group: 'general', scope: 'pool', default: 'ip', key: 'hashKey',
    help: 'for mode hash: ip, header:<name>, query:<name>, cookie:<name> or path (tcp: ip only)'
  },
  { name: 'help', short: 'h', group: 'general', scope: 'command', default: '', help: 'print this help' },
  { name: 'version', short: 'V', group: 'general', scope: 'command', default: '', help: 'print the version' },
  {
    name: 'timeout', arg: '<t>', group: 'http', scope: 'pool', layers: ['http'], default: ms(DEFAULTS.timeout), key: 'timeout',
    help: 'how long a backend may stay silent, before its response head (504) or within its body (connection cut)',
    read: duration
  },
  {
    name: 'keepalive-timeout', arg: '<t>', group: 'http', scope: 'listener', layers: ['http'], default: ms(DEFAULTS.keepAliveTimeout), key: 'keepAliveTimeout',
    help: 'close idle client connections after this; 0 closes each connection after one response', read: durationOrZero
  },
  {
    name: 'header-timeout', arg: '<t>', group: 'http', scope: 'listener', layers: ['http', 'tcp'], default: ms(DEFAULTS.headerTimeout), key: 'headerTimeout',
    help: 'time a client has to send its request head, else 408', read: duration
  },
  {
    name: 'body-timeout', arg: '<t>', group: 'http', scope: 'listener', layers: ['http'], default: ms(DEFAULTS.bodyTimeout), key: 'bodyTimeout',
    help: 'the longest pause between two reads of a request body, else 408; the backend is not blamed',
    read: duration
  },
  {
    name: 'max-header-size', arg: '<n>', group: 'http', scope: 'listener', layers: ['http'], default: String(DEFAULTS.maxHeaderSize), key: 'maxHeaderSize',
    help: 'bytes a request head may take, else 431', read: (text, flag) => validateCount(text, flag, 1024)
  },
  {
    name: 'engine', arg: '<fast|node>', group: 'http', scope: 'global', reloads: true, default: DEFAULTS.engine, key: 'engine',
    help: "fast: lila's own HTTP/1.1 engine on net, and h2 (see --h2-engine); node: Node's core http, HTTP/1.1 only, the reference",
    read: (text, flag) => validateChoice(text, HTTP_ENGINES, flag)
  },
  {
    name: 'host-header', arg: '<client|backend>', group: 'http', scope: 'pool', layers: ['http'], default: DEFAULTS.hostHeader, key: 'hostHeader',
    help: "client: pass the client's Host unchanged; backend: send the backend's host:port",
    read: (text, flag) => validateChoice(text, HOST_HEADERS, flag)
  },
  {
    name: 'no-location-rewrite', group: 'http', scope: 'pool', layers: ['http'], default: 'rewrite on', key: 'locationRewrite',
    help: "keep a backend's Location and Content-Location naming its own address; by default they name lila: " +
      "the client's scheme and Host, as nginx's proxy_redirect default does",
    read: () => false
  },
  {
    name: 'no-http2', group: 'http', scope: 'listener', layers: ['http'], default: 'h2 on', key: 'http2',
    help: 'serve HTTP/1.1 only: no h2 offered by ALPN on TLS listeners, nor taken with prior knowledge on plain ones',
    read: () => false
  },
  {
    name: 'max-concurrent-streams', arg: '<n>', group: 'http', scope: 'listener', layers: ['http'], default: String(DEFAULTS.maxConcurrentStreams), key: 'maxConcurrentStreams',
    help: 'streams an h2 client may have open at once on one connection',
    read: (text, flag) => validateCount(text, flag, 1)
  },
  {
    name: 'h2-engine', arg: '<lila|node>', group: 'http', scope: 'listener', layers: ['http'], default: DEFAULTS.h2Engine, key: 'h2Engine',
    help: "how h2 clients are served: lila: lila's own HTTP/2 (frames, HPACK, flow control) on the connection; " +
      'node: core http2 (nghttp2)',
    read: (text, flag) => validateChoice(text, H2_ENGINES, flag)
  },
  {
    name: 'max-fails', arg: '<n>', group: 'health', scope: 'pool', default: String(DEFAULTS.maxFails), key: 'maxFails',
    help: 'failures within --fail-timeout that take a backend down (refused, timed out, reset before a response); ' +
      '0 turns passive health off',
    read: (text, flag) => validateCount(text, flag, 0)
  },
  {
    name: 'fail-timeout', arg: '<t>', group: 'health', scope: 'pool', default: ms(DEFAULTS.failTimeout), key: 'failTimeout',
    help: 'the window failures are counted in, and how long a backend stays down before one trial request',
    read: duration
  },
  {
    name: 'fail-on-5xx', group: 'health', scope: 'pool', layers: ['http'], default: 'off', key: 'failOn5xx',
    help: 'http: a 5xx response counts as a failure'
  },
  {
    name: 'health-check', group: 'health', scope: 'pool', default: 'off', key: 'healthCheck',
    help: 'check every backend actively: tcp connect, http GET --health-path answered 2xx or 3xx, or udp --health-payload answered'
  },
  {
    name: 'health-interval', arg: '<t>', group: 'health', scope: 'pool', default: ms(DEFAULTS.healthInterval), key: 'healthInterval',
    help: 'time between two checks of a backend', read: duration
  },
  {
    name: 'health-timeout', arg: '<t>', group: 'health', scope: 'pool', default: ms(DEFAULTS.healthTimeout), key: 'healthTimeout',
    help: 'time a check may take', read: duration
  },
  {
    name: 'health-rise', arg: '<n>', group: 'health', scope: 'pool', default: String(DEFAULTS.healthRise), key: 'healthRise',
    help: 'good checks in a row that bring a backend up', read: (text, flag) => validateCount(text, flag, 1)
  },
  {
    name: 'health-fall', arg: '<n>', group: 'health', scope: 'pool', default: String(DEFAULTS.healthFall), key: 'healthFall',
    help: 'failed checks in a row that take a backend down', read: (text, flag) => validateCount(text, flag, 1)
  },
  {
    name: 'health-path', arg: '<path>', group: 'health', scope: 'pool', layers: ['http'], default: DEFAULTS.healthPath, key: 'healthPath',
    help: 'path of the http check', read: validatePath
  },
  {
    name: 'health-payload', arg: '<udp:HEX|dns:NAME>', group: 'health', scope: 'pool', layers: ['udp'], default: 'an empty datagram', key: 'healthPayload',
    help: 'what the udp check sends: these bytes, or a DNS query for NAME\'s A record; any answer passes, none or ICMP unreachable fails',
    read: (text, flag) => {
      parseHealthPayload(text, flag);
      return text;
    }
  },
  {
    name: 'slow-start', arg: '<t>', group: 'health', scope: 'pool', default: ms(DEFAULTS.slowStart), key: 'slowStart',
    help: 'a backend back up ramps to its full weight over this time; 0 is off', read: durationOrZero
  },
  {
    name: 'max-conns', arg: '<n>', group: 'limits', scope: 'pool', default: String(DEFAULTS.maxConns), key: 'maxConns',
    help: 'per backend: http requests or tcp connections at once, for servers without maxconn=N; 0 is no limit',
    read: (text, flag) => validateCount(text, flag, 0)
  },
  {
    name: 'max-queue', arg: '<n>', group: 'limits', scope: 'pool', default: String(DEFAULTS.maxQueue), key: 'maxQueue',
    help: 'requests or connections that may wait for a backend at its limit; more get 503 (http) or are closed (tcp)',
    read: (text, flag) => validateCount(text, flag, 0)
  },
  {
    name: 'queue-timeout', arg: '<t>', group: 'limits', scope: 'pool', default: ms(DEFAULTS.queueTimeout), key: 'queueTimeout',
    help: 'how long one may wait in that queue, then 503 with Retry-After (http) or closed (tcp)', read: duration
  },
  {
    name: 'sticky', arg: '<cookie[:name]>', group: 'limits', scope: 'pool', layers: ['http'], default: 'off', key: 'sticky',
    help: 'http: send each client back to the backend that served it, by a cookie lila sets (named lila by default)',
    read: (text, flag) => {
      parseSticky(text, flag);
      return text;
    }
  },
  {
    name: 'rate-limit', arg: '<n>/<s|m>[,burst=<b>]', group: 'limits', scope: 'listener-route', default: 'off', key: 'rateLimit',
    help: 'requests (http) or new connections (tcp) per second or minute for each client address (or --rate-limit-key), ' +
      'burst b at once (default n); more get 429 with Retry-After (http) or are closed (tcp); on a route line, ' +
      "that route's requests, counted apart from its listener's",
    read: (text, flag) => {
      parseRateLimit(text, flag);
      return text;
    }
  },
  {
    name: 'rate-limit-key', arg: '<key>', group: 'limits', scope: 'listener-route', default: 'ip', key: 'rateLimitKey',
    help: 'what the --rate-limit of the same line counts by: ip, header:<name>, query:<name> or cookie:<name>, read as ' +
      '--hash-key reads them; a request without it (or with one over 256 characters) by its client address (tcp: ip only)',
    read: (text, flag) => {
      parseHashKey(text, { flag, path: false });
      return text;
    }
  },
  {
    name: 'rate-limit-name', arg: '<name>', group: 'limits', scope: 'listener-route', default: 'none', key: 'rateLimitName',
    help: 'count the --rate-limit of the same line together with every line giving the same name, in this lila and in ' +
      '--rate-limit-store (they must give the same --rate-limit and --rate-limit-key); unnamed, a listen line\'s limit is ' +
      'known by its port, a route\'s by its port and match',
    read: (text, flag) => parseRateLimitName(text, flag)
  },
  {
    name: 'rate-limit-store', arg: '<url>', group: 'limits', scope: 'global', default: 'off',
    help: 'count every --rate-limit with every lila naming the same Redis or Valkey: redis://[user[:pass]@]host:port[/db] ' +
      '(rediss:// for TLS; the password also from LILA_RATE_LIMIT_STORE_PASSWORD); when it is lost, each lila counts alone',
    read: (text, flag) => parseRedisUrl(text, flag)
  },
  {
    name: 'rate-limit-store-ca', arg: '<file>', group: 'limits', scope: 'global', default: 'system CAs',
    help: "PEM CA certificates that a rediss:// store's certificate is verified against"
  },
  {
    name: 'rate-limit-store-timeout', arg: '<t>', group: 'limits', scope: 'global', default: '50ms',
    help: "the longest a request waits for the store's decision; past it, lila decides from its own count",
    read: duration
  },
  {
    name: 'rate-limit-sync', arg: '<t>', group: 'limits', scope: 'global', default: 'off',
    help: 'decide each request from the last shared count and share this lila\'s counts every t (as Kong\'s sync_rate), ' +
      'instead of asking the store for each one; the fleet may then admit a little more in one t',
    read: duration
  },
  {
    name: 'max-body-size', arg: '<bytes>', group: 'limits', scope: 'listener', layers: ['http'], default: 'off', key: 'maxBodySize',
    help: 'http: the largest request body, in bytes or with k, m or g (10m); a larger Content-Length gets 413 at once, ' +
      'a chunked body growing past it 413 or a cut connection',
    read: validateSize
  },
  {
    name: 'max-connections', arg: '<n>', group: 'limits', scope: 'listener', default: 'none', key: 'maxConnections',
    help: 'client connections served at once; past it, new ones wait unserved until one closes',
    read: (text, flag) => validateCount(text, flag, 1)
  },
  {
    name: 'udp-idle-timeout', arg: '<t>', group: 'general', scope: 'listener', layers: ['udp'], default: ms(DEFAULTS.udpIdleTimeout), key: 'udpIdleTimeout',
    help: 'udp: a flow with no datagram either way for this long ends, and its upstream socket closes', read: duration
  },
  {
    name: 'udp-responses', arg: '<n>', group: 'general', scope: 'listener', layers: ['udp'], default: 'none', key: 'udpResponses',
    help: 'udp: each datagram of a client is owed this many replies (1 for DNS); a flow ends once every one it sent ' +
      "has them, as nginx's proxy_responses",
    read: (text, flag) => validateCount(text, flag, 1)
  },
  {
    name: 'tls-cert', arg: '<file|dir>', group: 'tls', scope: 'listener', default: 'off', multiple: true,
    help: 'serve TLS with the certificate chain of this PEM file, or with every NAME.pem and NAME.crt of a ' +
      'directory (and NAME.key beside it); repeat it for more certificates, chosen by the name the client asks ' +
      'for (SNI), the first for clients that ask none'
  },
  {
    name: 'tls-key', arg: '<file>', group: 'tls', scope: 'listener', default: '', multiple: true,
    help: 'the private key of the --tls-cert before it, unless its PEM holds the key'
  },
  {
    name: 'tls-min-version', arg: '<1.2|1.3>', group: 'tls', scope: 'listener', default: '1.2',
    help: 'the lowest TLS version clients may use', read: (text, flag) => validateChoice(text, MIN_VERSIONS, flag)
  },
  {
    name: 'tls-ciphers', arg: '<list>', group: 'tls', scope: 'listener', default: 'Mozilla intermediate',
    help: "the TLS 1.2 cipher suites, as an OpenSSL list (TLS_ names set TLS 1.3's); by default Mozilla's " +
      'intermediate profile: ECDHE and AEAD suites only',
    read: validateCiphers
  },
  {
    name: 'tls-curves', arg: '<list>', group: 'tls', scope: 'listener', default: 'X25519:P-256:P-384',
    help: 'the key exchange groups offered, in order, separated by ":"',
    read: validateCurves
  },
  {
    name: 'redirect-http', arg: '<[host:]port>', group: 'tls', scope: 'listener', default: 'off',
    help: 'on a TLS listener: also listen for plain http there, answering every request with 308 to the same host and ' +
      'path on https (a plain listener that only redirects is --redirect-https)',
    read: hostAndPort
  },
  {
    name: 'redirect-https', group: 'route', scope: 'listener', layers: ['http'], default: 'off',
    help: 'a plain http listener answers every request with 308 to the same host and URI on https (it needs no route); ' +
      'a TLS listener names its plain port with --redirect-http PORT instead'
  },
  {
    name: 'backend-ca', arg: '<file>', group: 'tls', scope: 'global', reloads: true, default: "Node's CAs",
    help: 'verify the certificates of tls backends against the CA certificates of this PEM file'
  },
  {
    name: 'backend-insecure', group: 'tls', scope: 'global', reloads: true, default: 'off',
    help: 'do not verify the certificates of tls backends (said at startup)'
  },
  {
    name: 'tls', group: 'tls', scope: 'listener', default: 'off',
    help: 'serve TLS with the certificates --acme obtains only, without a --tls-cert (with --acme, a listener on port 443 is HTTPS already)'
  },
  {
    name: 'tls-client-ca', arg: '<file>', group: 'tls', scope: 'listener', default: 'off',
    help: 'ask every client for a certificate, and accept those the CAs of this PEM file issued (mutual TLS); ' +
      'backends learn who the client is from X-Forwarded-Client-Cert'
  },
  {
    name: 'tls-client-verify', arg: '<required|optional>', group: 'tls', scope: 'listener', default: 'required',
    help: 'with --tls-client-ca: required, a client without a valid certificate fails its handshake; optional, it is ' +
      'served, and its requests reach backends without X-Forwarded-Client-Cert',
    read: (text, flag) => validateChoice(text, CLIENT_VERIFY_MODES, flag)
  },
  {
    name: 'tls-client-crl', arg: '<file>', group: 'tls', scope: 'listener', default: 'none',
    help: 'with --tls-client-ca: refuse the client certificates the CRLs of this PEM file revoke (one CRL from each CA ' +
      'of a chain); read again with the certificates'
  },
  {
    name: 'allow-client-cert', arg: '<pattern>', group: 'tls', scope: 'route', default: 'any client', action: 'allowClientCert',
    multiple: true,
    help: 'only clients whose verified certificate has this subject (CN=ops,O=Example) or a SAN that matches ' +
      '(spiffe://example.org/ns/prod/*, *.internal.example: * within one segment) are served; others get 403'
  },
  {
    name: 'acme', arg: '<email>', group: 'acme', scope: 'global', default: 'off',
    help: 'obtain and renew, from an ACME CA (Let\'s Encrypt by default), a certificate for every host routed on an ' +
      'HTTPS listener that no --tls-cert covers (a *. wildcard with dns-01); the email is the account\'s contact',
    read: acmeEmail
  },
  {
    name: 'acme-directory', arg: '<url>', group: 'acme', scope: 'global', default: 'letsencrypt',
    help: "the CA's ACME directory URL; letsencrypt and letsencrypt-staging name Let's Encrypt's",
    read: acmeDirectory
  },
  {
    name: 'acme-ca', arg: '<file>', group: 'acme', scope: 'global', default: "Node's CAs",
    help: "trust the CA certificates of this PEM file for the directory's own HTTPS (a CA of one's own, a test CA)"
  },
  {
    name: 'acme-eab', arg: '<kid:hmac>', group: 'acme', scope: 'global', default: 'none',
    help: 'the external account binding a CA requires (ZeroSSL, Google): its key id and base64url HMAC key',
    read: acmeEab
  },
  {
    name: 'acme-challenges', arg: '<list>', group: 'acme', scope: 'global', default: 'http-01,tls-alpn-01',
    help: 'the validations offered, by preference: http-01 (a plain http listener, or lila on --acme-http-port), ' +
      'tls-alpn-01 (the HTTPS listener), dns-01 (a TXT record through --acme-dns; the only one for a *. wildcard, tried last ' +
      'for other names); the one that worked for a name is tried first next time; dns-01 is added when --acme-dns is given',
    read: acmeChallenges
  },
  {
    name: 'acme-dns', arg: '<url>', group: 'acme', scope: 'global', default: 'none',
    help: 'where dns-01 writes its _acme-challenge TXT records: rfc2136://host:port, the zone\'s primary by RFC 2136 dynamic ' +
      'update (signed with --acme-dns-tsig), or exec:FILE, a command run as FILE present FQDN VALUE, then FILE cleanup FQDN VALUE',
    read: acmeDns
  },
  {
    name: 'acme-dns-tsig', arg: '<name:algorithm:secret>', group: 'acme', scope: 'global', default: 'none',
    help: 'the TSIG key rfc2136 updates are signed with (hmac-sha256, hmac-sha512, hmac-sha384, hmac-sha224, hmac-sha1; ' +
      'the secret base64, as tsig-keygen writes it); also from LILA_ACME_DNS_TSIG',
    read: acmeDnsTsig
  },
  {
    name: 'acme-dns-propagation-timeout', arg: '<t>', group: 'acme', scope: 'global', default: '120s',
    help: 'how long every nameserver of the zone may take to answer a new TXT record before the CA is told; then the order fails and is tried again later',
    read: duration
  },
  {
    name: 'acme-dns-resolvers', arg: '<ip[:port],...>', group: 'acme', scope: 'global', default: '/etc/resolv.conf',
    help: 'the DNS servers dns-01 asks for a name\'s zone (SOA), the zone\'s nameservers (NS) and their addresses',
    read: validateResolvers
  },
  {
    name: 'acme-dns-nameserver-port', arg: '<port>', group: 'acme', scope: 'global', default: '53',
    help: 'the port the zone\'s nameservers are asked on for the TXT record (another for a zone served on a test port)',
    read: validatePort
  },
  {
    name: 'acme-http-port', arg: '<[host:]port>', group: 'acme', scope: 'global', default: '80',
    help: 'where lila answers http-01 (and redirects the rest to https) when no plain http listener is there; ' +
      'another port behind a port forward from 80',
    read: hostAndPort
  },
  {
    name: 'acme-max-concurrency', arg: '<n>', group: 'acme', scope: 'global', default: '2',
    help: 'orders in flight at once; more names wait their turn (the CA rate-limits new orders)',
    read: (text, flag) => validateCount(text, flag, 1)
  },
  {
    name: 'state-dir', arg: '<dir>', group: 'acme', scope: 'global', default: '$XDG_DATA_HOME/lila or ~/.local/share/lila',
    help: 'where the ACME account, keys (mode 0600) and certificates are kept; lila instances may share it (one orders a name, the others read it); ' +
      'with --store, where the last configuration applied is kept'
  },
  {
    name: 'store', arg: '<url>', group: 'store', scope: 'global', default: 'off',
    help: 'share the configuration and the admin API\'s backend changes with every lila naming the same store: ' +
      'etcd://[user[:pass]@]host:port[,host:port]/prefix (prefix /lila; etcds:// for TLS; the password also from LILA_STORE_PASSWORD)',
    read: (text, flag) => parseStoreUrl(text, flag)
  },
  {
    name: 'store-ca', arg: '<file>', group: 'store', scope: 'global', default: 'system CAs',
    help: 'PEM CA certificates that the store\'s TLS certificate is verified against (implies TLS)'
  },
  {
    name: 'store-cert', arg: '<file>', group: 'store', scope: 'global', default: 'none',
    help: 'PEM client certificate lila presents to the store (implies TLS; with --store-key)'
  },
  {
    name: 'store-key', arg: '<file>', group: 'store', scope: 'global', default: 'none',
    help: 'PEM private key of --store-cert'
  },
  {
    name: 'store-insecure', group: 'store', scope: 'global', default: 'off',
    help: 'allow a plain etcd:// store on another machine: the configuration and its secrets cross the network unencrypted'
  },
  {
    name: 'if-revision', arg: '<n>', group: 'store', scope: 'command', default: 'the revision read',
    help: 'with lila push: write only if the stored configuration is still at revision n (as GET /config\'s ETag said)',
    read: (text, flag) => validateCount(text, flag, 0)
  },
  {
    name: 'kubernetes', group: 'kubernetes', scope: 'command', default: 'off',
    help: 'serve what the cluster\'s Gateway API resources and Ingresses say (controllers lila-lb.dev/gateway-controller and ' +
      'lila-lb.dev/ingress-controller), writing their status back; in a pod with its service account, else with --kubeconfig'
  },
  {
    name: 'kubeconfig', arg: '<file>', group: 'kubernetes', scope: 'command', default: '$KUBECONFIG, ~/.kube/config',
    help: 'with --kubernetes outside a cluster: the kubeconfig file whose server, CA and user (a token or a client certificate) lila uses'
  },
  {
    name: 'kube-context', arg: '<name>', group: 'kubernetes', scope: 'command', default: 'the current context',
    help: 'the kubeconfig\'s context to use'
  },
  {
    name: 'gateway-class', arg: '<name>', group: 'kubernetes', scope: 'command', default: 'every class of lila\'s controller',
    help: 'serve only the Gateways of this GatewayClass'
  },
  {
    name: 'gateway', arg: '<namespace/name>', group: 'kubernetes', scope: 'command', default: 'every Gateway of its classes',
    help: 'serve this one Gateway only',
    read: (text, flag) => {
      if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/.test(text)) throw new LilaError(codes.INVALID_OPTION, `"${flag}" must be NAMESPACE/NAME, received ${JSON.stringify(text)}`);
      return text;
    }
  },
  {
    name: 'ingress-class', arg: '<name>', group: 'kubernetes', scope: 'command', default: 'every class of lila\'s controller',
    help: 'serve only the Ingresses of this IngressClass (an IngressClass marked default takes Ingresses without a class)'
  },
  {
    name: 'publish-address', arg: '<address>', group: 'kubernetes', scope: 'command', default: '--publish-service\'s', multiple: true,
    help: 'the address (IP or host name) written in Gateways\' status.addresses and Ingresses\' status.loadBalancer; repeatable'
  },
  {
    name: 'publish-service', arg: '<namespace/name>', group: 'kubernetes', scope: 'command', default: 'none',
    help: 'the Service in front of lila, whose load balancer addresses (else its cluster IP) status says'
  },
  {
    name: 'admin', arg: '<[host:]port>', group: 'admin', scope: 'global', default: 'off',
    help: 'serve the admin API on this port: GET / (the live dashboard), GET /events, GET /status, GET /metrics (Prometheus), ' +
      'GET /route?key= (or ?id=), GET and PUT /config (with a config file or --store), GET /cluster (with --store), ' +
      'POST /pools/<pool>/backends, DELETE and PATCH ' +
      '/pools/<pool>/backends/<name>, POST .../drain and .../enable (/backends/... while one pool runs), POST /cache/purge; ' +
      'host 127.0.0.1 unless given',
    read: hostAndPort
  },
  {
    name: 'admin-token', arg: '<t>', group: 'admin', scope: 'global', default: 'none',
    help: 'changes through the admin API, and GET /config, need Authorization: Bearer <t>; PUT /config needs one set; ' +
      'also from LILA_ADMIN_TOKEN; required when the admin host is not loopback'
  },
  {
    name: 'log-format', arg: '<text|json>', group: 'logging', scope: 'global', default: 'text',
    help: 'log lines as text, or one JSON object a line with time, level, msg and fields',
    read: (text, flag) => validateChoice(text, Logger.FORMATS, flag)
  },
  {
    name: 'log-level', arg: '<level>', group: 'logging', scope: 'global', default: 'info',
    help: 'error, warn, info, debug, trace or silent; debug lines (every socket error) also with NODE_DEBUG=lila; ' +
      'trace adds a line for each pick of a backend and each retry',
    read: (text, flag) => validateChoice(text, Logger.LEVELS, flag)
  },
  {
    name: 'access-log', group: 'logging', scope: 'global', default: 'off',
    help: 'one line per http request (method, path, status, backend, duration, bytes) or tcp connection'
  },
  {
    name: 'access-log-format', arg: '<text|json|combined|common>', group: 'logging', scope: 'global', default: 'as --log-format',
    help: "the access lines: text or json, lila's lines with time, protocol, user agent and request ids; combined or common, " +
      "nginx's and Apache's lines, without lila's prefix, for GoAccess and other log tools; implies --access-log",
    read: (text, flag) => validateChoice(text, Logger.ACCESS_FORMATS, flag)
  },
  {
    name: 'request-id', group: 'logging', scope: 'global', reloads: true, default: 'off', key: 'requestId',
    help: "http: every request gets an id, the client's X-Request-ID when valid (1 to 200 letters, digits or -_.:+/=@), " +
      'else 32 random hex digits, and a W3C traceparent, continued with a parent id of lila\'s or started; both go to ' +
      "the backend and into access lines, the id into every response's X-Request-ID and lila's own answers"
  },
  {
    name: 'otlp-endpoint', arg: '<url>', group: 'tracing', scope: 'global', default: 'off',
    help: "send lila's spans to this OpenTelemetry collector over OTLP/HTTP (/v1/traces appended), as in " +
      'http://127.0.0.1:4318: a SERVER span per http request and tcp connection, a CLIENT span per backend attempt; ' +
      "the backend's traceparent names lila's span",
    read: parseOtlpEndpoint
  },
  {
    name: 'otlp-protocol', arg: '<http/protobuf|http/json>', group: 'tracing', scope: 'global', default: 'http/protobuf',
    help: "the exports' encoding: protobuf's binary format or OTLP/JSON",
    read: (text, flag) => validateChoice(text, OTLP_PROTOCOLS, flag)
  },
  {
    name: 'otlp-header', arg: '<name=value>', group: 'tracing', scope: 'global', default: 'none', multiple: true,
    help: "a header field sent with every export, as a collector's credentials: Authorization=Bearer 123; repeatable",
    read: parseOtlpHeaders
  },
  {
    name: 'service-name', arg: '<name>', group: 'tracing', scope: 'global', default: 'lila',
    help: "the service.name of lila's spans",
    read: parseServiceName
  },
  {
    name: 'trace-sample', arg: '<ratio>', group: 'tracing', scope: 'global', default: '1',
    help: "the share of the traces lila starts that it records, from 0 to 1; a client's traceparent decides for its own " +
      '(its sampled flag); a trace not recorded goes on to the backend unsampled',
    read: parseTraceSample
  },
  {
    name: 'workers', arg: '<n|auto>', group: 'workers', scope: 'global', default: 'off: one process',
    help: 'run n lila processes on the same port (auto: one per core); a worker that dies is replaced, and a crash ' +
      "loop (5 crashes within 10 s) exits 1; least-connections, p2c, ewma and health see one worker's traffic each",
    read: workerCount
  },
  {
    name: 'match-method', arg: '<methods>', group: 'match', scope: 'match', default: 'any', action: 'matchMethod', multiple: true,
    help: 'the route takes only requests of these methods, comma-separated: GET,HEAD'
  },
  {
    name: 'match-header', arg: '<field>', group: 'match', scope: 'match', default: 'none', action: 'matchHeader', multiple: true,
    words: { min: 1, max: 1 }, read: (lists) => lists.map(([field]) => field),
    help: '"Name: value" or "Name: ~regex": the route takes only requests with that field, of that value or matching ' +
      '(the name in any case); repeatable, all must hold'
  },
  {
    name: 'match-query', arg: '<name=value>', group: 'match', scope: 'match', default: 'none', action: 'matchQuery', multiple: true,
    help: 'name=value or name=~regex: only requests with that query parameter (its first value, percent-decoded), ' +
      'of that value or matching'
  },
  {
    name: 'match-cookie', arg: '<name=value>', group: 'match', scope: 'match', default: 'none', action: 'matchCookie', multiple: true,
    help: 'name=value or name=~regex: only requests with that cookie, of that value or matching'
  },
  {
    name: 'strip-prefix', group: 'route', scope: 'route', default: 'off', action: 'stripPrefix',
    help: "the backend gets the path without the route's path prefix: route /api with /api/users sends /users, /api sends /"
  },
  {
    name: 'add-prefix', arg: '<path>', group: 'route', scope: 'route', default: 'none', action: 'addPrefix',
    help: 'the backend gets the path with this prefix in front (after --strip-prefix): /v2'
  },
  {
    name: 'rewrite', arg: '<regex> <replacement>', group: 'route', scope: 'route', default: 'none', action: 'rewrite',
    words: { min: 2, max: 2 },
    help: 'the backend gets the path (not the query) with a JavaScript regular expression replaced ($1 for its groups)'
  },
  {
    name: 'redirect', arg: '<url> [code]', group: 'route', scope: 'route', default: 'none', action: 'redirect',
    words: { min: 1, max: 2, more: /^\d{3}$/ },
    help: 'answer every request with a redirect to the URL (placeholders {scheme} {host} {uri} {path} {query}), ' +
      '301, 302 (the default), 303, 307 or 308; the route needs no pool'
  },
  {
    name: 'respond', arg: '<code> [body]', group: 'route', scope: 'route', default: 'none', action: 'respond',
    words: { min: 1, max: 2, more: /^(?!-)/ },
    help: 'answer every request with this status and body (text/plain, or --content-type); the route needs no pool'
  },
  {
    name: 'content-type', arg: '<type>', group: 'route', scope: 'route', default: 'text/plain', action: 'contentType',
    help: "the Content-Type of --respond's body"
  },
  {
    name: 'request-header', arg: '<field>', group: 'route', scope: 'route', default: 'none', action: 'requestHeader', multiple: true,
    // One word, taken even when it starts with "-" (-Name removes a field).
    words: { min: 1, max: 1 }, read: (lists) => lists.map(([field]) => field),
    help: '"Name: value" sets a field of the request the backend gets, "+Name: value" adds one, "-Name" removes it; ' +
      'placeholders as --redirect, and {client_ip} {request_id}'
  },
  {
    name: 'response-header', arg: '<field>', group: 'route', scope: 'route', default: 'none', action: 'responseHeader', multiple: true,
    words: { min: 1, max: 1 }, read: (lists) => lists.map(([field]) => field),
    help: 'the same for the response the client gets, lila\'s own answers included'
  },
  {
    name: 'hsts', arg: '[max-age]', group: 'route', scope: 'route', default: 'off', action: 'hsts',
    words: { min: 0, max: 1, more: /^\d+[smhd]?$/ }, read: (words) => (words.length === 0 ? true : words[0]),
    help: 'Strict-Transport-Security on responses over TLS, max-age in seconds (or 30d, 12h) from one year by default'
  },
  {
    name: 'cors', arg: '<origins|*>', group: 'route', scope: 'route', default: 'off', action: 'cors',
    help: "answer browsers' CORS preflights itself and add the CORS fields for these origins (comma-separated; " +
      'credentials only with named origins)'
  },
  {
    name: 'allow', arg: '<cidr,...>', group: 'route', scope: 'route', default: 'everyone', action: 'allow', multiple: true,
    help: 'only clients in these blocks (10.0.0.0/8, 2001:db8::/32, an address; after --accept-proxy) are served; others get 403'
  },
  {
    name: 'deny', arg: '<cidr,...>', group: 'route', scope: 'route', default: 'no one', action: 'deny', multiple: true,
    help: 'clients in these blocks get 403, whatever --allow says'
  },
  {
    name: 'basic-auth', arg: '<file>', group: 'route', scope: 'route', default: 'off', action: 'basicAuth',
    help: 'ask for a user name and password of this htpasswd file (bcrypt from htpasswd -B, or lila hash-password), ' +
      'else 401; the backend never sees Authorization; a config file\'s reload reads it again'
  },
  {
    name: 'forward-auth', arg: '<url>', group: 'route', scope: 'route', default: 'off', action: 'forwardAuth',
    help: 'ask this auth service (Authelia, Authentik, oauth2-proxy) about each request first: a 2xx lets it through, ' +
      'any other answer goes back to the client as it is, no answer within 5s is a 502'
  },
  {
    name: 'forward-auth-headers', arg: '<names>', group: 'route', scope: 'route', default: 'none', action: 'forwardAuthHeaders',
    help: "the fields of the auth service's 2xx answer the backend gets (Remote-User,Remote-Groups), " +
      "in place of the client's fields of those names"
  },
  {
    name: 'error-page', arg: '<codes=file>', group: 'route', scope: 'route', default: 'none', action: 'errorPage', multiple: true,
    help: "lila's own answers with these statuses (502,503,504=/srv/down.html) have this HTML file as their body"
  },
  {
    name: 'compress', arg: '[level]', group: 'route', scope: 'route', default: 'off', action: 'compress',
    words: { min: 0, max: 1, more: /^\d+$/ }, read: (words) => (words.length === 0 ? true : words[0]),
    help: 'compress responses of text types (HTML, CSS, JS, JSON, XML, SVG, WASM) of 1 KB or more with br, zstd or gzip, ' +
      "as the client's Accept-Encoding prefers; level is gzip's, 1 to 9 (5); br is at 4, zstd at 3"
  },
  {
    name: 'mirror', arg: '<pool[=percent]>', group: 'route', scope: 'route', default: 'off', action: 'mirror', multiple: true,
    help: 'send a copy of every request (or of this percent of them, by the route\'s --hash-key when it has one) to this ' +
      'pool, Host with -shadow added; its answer is thrown away, and the client never waits for it',
    read: (values, flag) => values.map((value) => parseMirror(value, flag) && value)
  },
  {
    name: 'mirror-body-limit', arg: '<bytes>', group: 'route', scope: 'route', default: '1m', action: 'mirrorBodyLimit',
    help: 'the largest request body --mirror copies, in bytes or with k, m or g; a request with a larger one is not mirrored',
    read: validateSize
  },
  {
    name: 'cache', group: 'cache', scope: 'route', default: 'off', action: 'cache',
    help: 'store what RFC 9111 lets a shared cache store of this route\'s answers, and answer from the store: fresh ' +
      'answers at once, stale ones revalidated, one fetch per key however many clients ask at once'
  },
  {
    name: 'cache-size', arg: '<bytes>', group: 'cache', scope: 'global', default: '256m',
    help: 'the memory --cache stores in, in bytes or with k, m or g (headers counted); past it, the least recently used go',
    read: validateSize
  },
  {
    name: 'cache-dir', arg: '<dir>', group: 'cache', scope: 'global', default: 'none',
    help: 'also store on disk in this directory: what is stored survives a restart, and --workers share it',
    read: (value, flag) => validateCacheDir(value, flag)
  },
  {
    name: 'cache-dir-size', arg: '<bytes>', group: 'cache', scope: 'global', default: '1g',
    help: 'the disk --cache-dir stores on, in bytes or with k, m or g; past it, the least recently used go',
    read: validateSize
  },
  {
    name: 'cache-max-object', arg: '<bytes>', group: 'cache', scope: 'global', default: '8m',
    help: 'the largest answer --cache stores (its body); a larger one goes to its clients as usual, not stored',
    read: validateSize
  },
  {
    name: 'cache-lock-timeout', arg: '<t>', group: 'cache', scope: 'global', default: '5s',
    help: 'how long a request waits for another one\'s fetch of the same answer before it goes to the backend on its own',
    read: validateDuration
  },
  {
    name: 'cache-stale-if-error', arg: '<t>', group: 'cache', scope: 'global', default: '0',
    help: 'how long past its freshness a stored answer that says no stale-if-error of its own may be given when the ' +
      'backend fails (refused, reset, timed out, 500, 502, 503, 504)',
    read: validateDuration
  },
  {
    name: 'root', arg: '<dir>', group: 'files', scope: 'route', default: 'off', action: 'root',
    help: 'answer GET and HEAD from the files under this directory, the request path appended (after --strip-prefix and ' +
      'the other path edits), before the route\'s pool if it has one: what is no file goes there (without a pool: 404)',
    read: (value, flag) => validateDirectory(value, flag)
  },
  {
    name: 'index', arg: '<name[,name...]>', group: 'files', scope: 'route', default: 'index.html', action: 'index',
    help: 'the file a directory is answered with, the first of these that exists',
    read: (value, flag) => validateNames(value, flag)
  },
  {
    name: 'browse', group: 'files', scope: 'route', default: 'off', action: 'browse',
    help: 'list a directory that has no index file (an HTML page, names linked, dotfiles left out)'
  },
  {
    name: 'fallback', arg: '<path>', group: 'files', scope: 'route', default: 'none', action: 'fallback',
    help: 'answer a GET for a path that is no file with this file under --root (200), as a single-page app needs ' +
      '(route * --root /srv/app --fallback /index.html)',
    read: validatePath
  },
  {
    name: 'precompressed', group: 'files', scope: 'route', default: 'off', action: 'precompressed',
    help: 'serve FILE.br, FILE.zst or FILE.gz beside FILE to a client that accepts that coding (Caddy\'s precompressed, ' +
      "nginx's gzip_static); without one, --compress applies"
  },
  {
    name: 'hook', arg: '<file>', group: 'hooks', scope: 'route', default: 'none', action: 'hook',
    help: 'run this JavaScript module\'s onRequest, onResponse and transformResponse (CommonJS or ESM) on each of the ' +
      "route's http requests: change the request, choose its pool or answer it; change the answer and its body",
    read: (value, flag) => validateFile(value, flag)
  },
  {
    name: 'hook-timeout', arg: '<t>', group: 'hooks', scope: 'route', default: '1s', action: 'hookTimeout',
    help: 'how long lila waits for an async hook: past it the client gets 504 (a request not sent to any backend)',
    read: validateDuration
  },
  {
    name: 'jwt-jwks', arg: '<url|file>', group: 'identity', scope: 'route', default: 'off', action: 'jwtJwks',
    help: 'each request needs a valid JWT (Authorization: Bearer), verified with the keys of this JWK Set: a URL, read ' +
      'again as its Cache-Control says and for a kid not in hand (at most every 10s), or a file; no token or a bad one gets 401'
  },
  {
    name: 'jwt-issuer', arg: '<iss>', group: 'identity', scope: 'route', default: 'any', action: 'jwtIssuer',
    help: "the iss a token must have; without --jwt-jwks, the keys are those of its /.well-known/openid-configuration's jwks_uri"
  },
  {
    name: 'jwt-audience', arg: '<aud>', group: 'identity', scope: 'route', default: 'any', action: 'jwtAudience', multiple: true,
    help: 'an aud the token must have; repeatable: one of them'
  },
  {
    name: 'jwt-require', arg: '<claim=value>', group: 'identity', scope: 'route', default: 'none', action: 'jwtRequire', multiple: true,
    help: 'a claim the token must have, of this value or a list holding it (scope: separated by spaces); repeatable, all ' +
      'must hold; a valid token without it gets 403'
  },
  {
    name: 'jwt-header', arg: '<header=claim>', group: 'identity', scope: 'route', default: 'none', action: 'jwtHeader', multiple: true,
    help: "the backend gets this field with the claim's value (X-User=sub; a dotted path reaches into objects); a client's " +
      'own field of that name is always removed'
  },
  {
    name: 'jwt-from', arg: '<header:name|cookie:name|query:name>', group: 'identity', scope: 'route', default: 'Authorization: Bearer',
    action: 'jwtFrom', help: 'where a request carries its token'
  },
  {
    name: 'jwt-optional', group: 'identity', scope: 'route', default: 'off', action: 'jwtOptional',
    help: 'a request without a token goes on, without the claims\' fields; a token that is not valid still gets 401'
  },
  {
    name: 'jwt-leeway', arg: '<t>', group: 'identity', scope: 'route', default: '30s', action: 'jwtLeeway',
    help: 'how far clocks may differ when exp and nbf are checked',
    read: durationOrZero
  },
  {
    name: 'oidc-issuer', arg: '<url>', group: 'identity', scope: 'route', default: 'off', action: 'oidcIssuer',
    help: 'a browser logs in with this OpenID provider (its /.well-known/openid-configuration) and holds a session: without ' +
      "one, a page request (GET or HEAD accepting text/html) is sent to log in, any other gets 401; the route's hosts answer " +
      '/oauth2/callback and /oauth2/logout'
  },
  {
    name: 'oidc-client-id', arg: '<id>', group: 'identity', scope: 'route', default: 'none', action: 'oidcClientId',
    help: "lila's client id at the provider (its redirect URI: https://HOST/oauth2/callback)"
  },
  {
    name: 'oidc-client-secret', arg: '<secret>', group: 'identity', scope: 'route', default: 'none', action: 'oidcClientSecret',
    help: 'its client secret, also from LILA_OIDC_CLIENT_SECRET; without one, lila is a public client (PKCE alone)'
  },
  {
    name: 'oidc-cookie-secret', arg: '<secret>', group: 'identity', scope: 'route', default: 'none', action: 'oidcCookieSecret',
    help: 'what sessions are sealed with (AES-256-GCM), also from LILA_OIDC_COOKIE_SECRET, 16 characters or more: the same ' +
      'on every worker and fleet member, so that any of them accepts a session'
  },
  {
    name: 'oidc-scopes', arg: '<scope,...>', group: 'identity', scope: 'route', default: 'openid,email,profile', action: 'oidcScopes',
    help: 'the scopes a login asks for (openid among them)'
  },
  {
    name: 'oidc-session', arg: '<t>', group: 'identity', scope: 'route', default: '8h', action: 'oidcSession',
    help: 'how long a session lasts once logged in',
    read: (text, flag) => validateDuration(text, flag, { min: 60000 })
  },
  {
    name: 'endpoint', short: 'e', arg: '<host:port>', group: 'equilibrio', scope: 'command', default: '', multiple: true,
    help: "a server, as equilibrio gives it (repeat -e for each); the mode is then --type, the layer tcp and the port 9080 " +
      'unless given'
  },
  {
    name: 'type', short: 't', arg: '<mode>', group: 'equilibrio', scope: 'command', default: 'round-robin',
    help: "with -e, the mode: equilibrio's round-robin or ip-hash, or any of lila's"
  },
  {
    name: 'bind-address', arg: '<addr>', group: 'equilibrio', scope: 'command', default: '', alias: 'address',
    help: "--address, by equilibrio's name", read: notEmpty
  },
  {
    name: 'bind-port', arg: '<n>', group: 'equilibrio', scope: 'command', default: '', alias: 'port',
    help: "--port, by equilibrio's name", read: validatePort
  }
];

/** Where the config file takes an option, by its `scope`, as README's option table says it. */
const SCOPE_TEXT = {
  global: 'a line of its own',
  pool: 'pool',
  listener: 'listen',
  layer: 'pool and listen',
  route: 'route and listen',
  'listener-route': 'listen or route',
  match: 'route',
  command: 'command line only'
};

/**
 * Where an option goes in a config file, as README's option reference says it: its scope, after
 * the layers it acts in when not every one (`http pool`, `http or tcp listen`).
 *
 * @param {{scope: string, layers?: string[]}} option an entry of `OPTIONS`
 * @returns {string}
 */
function scopeText(option) {
  return option.layers === undefined ? SCOPE_TEXT[option.scope] : `${option.layers.join(' or ')} ${SCOPE_TEXT[option.scope]}`;
}

// --acme-directory's short names.
const ACME_DIRECTORIES = {
  letsencrypt: 'https://acme-v02.api.letsencrypt.org/directory',
  'letsencrypt-staging': 'https://acme-staging-v02.api.letsencrypt.org/directory'
};
const ACME_CHALLENGES = ['http-01', 'tls-alpn-01', 'dns-01'];

/** The sections of `--help`, in order, by the `group` of the options. */
const GROUPS = {
  servers: 'Servers from a file, and the config file',
  dns: 'Servers found through DNS (host:port,resolve and srv:_service._proto.name)',
  proxy: 'PROXY protocol (the client\'s address through layered proxies)',
  general: 'Options (before or after the servers)',
  http: 'http layer',
  health: 'Health (a backend down gets no traffic; none available: http 503, tcp close)',
  limits: 'Protecting backends (limits and queue, stickiness, rate and size limits)',
  tls: 'TLS (HTTPS in the http layer; termination in the tcp layer)',
  acme: 'Certificates from an ACME CA (Let\'s Encrypt), obtained and renewed by lila',
  store: 'A fleet: lila sharing one configuration through etcd',
  kubernetes: 'Kubernetes: lila as a Gateway API implementation and an Ingress controller',
  admin: 'Admin API',
  logging: 'Logging (to stderr only)',
  tracing: 'Traces (OpenTelemetry spans over OTLP/HTTP)',
  workers: 'Workers',
  match: 'What a route takes, besides its host and path (route lines only; all must hold)',
  route: 'What a route does to a request (route and listen lines, or the command line)',
  files: 'Serving files (route and listen lines, or the command line)',
  cache: 'Caching responses (--cache on routes; the others on lines of their own)',
  hooks: 'Your own code on requests (route and listen lines, or the command line)',
  identity: 'Who the client is: JWT, OIDC (route and listen lines, or the command line)',
  equilibrio: "equilibrio's command line (lila -e host:port -e host:port -t ip-hash)"
};

/**
 * The option table as `util.parseArgs` takes it.
 *
 * @returns {Record<string, {type: 'string' | 'boolean', short?: string}>}
 */
function parseArgsOptions() {
  const table = {};
  for (const option of OPTIONS) {
    table[option.name] = { type: option.arg === undefined ? 'boolean' : 'string' };
    if (option.short !== undefined) table[option.name].short = option.short;
    if (option.multiple === true) table[option.name].multiple = true;
  }
  return table;
}

/**
 * Checks every value given and returns them as lila uses them: the
 * `createProxy` options under `proxy`, the others by name.
 *
 * @param {Record<string, string | boolean | undefined>} values from `util.parseArgs`
 * @returns {{proxy: object, [name: string]: unknown}}
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` naming the option and what it received
 */
function readOptions(values) {
  const result = { proxy: {}, actions: {} };
  for (const option of OPTIONS) {
    const text = values[option.name];
    if (text === undefined) continue;
    const value = option.read === undefined ? text : option.read(text, `--${option.name}`);
    if (option.alias !== undefined) {
      if (values[option.alias] !== undefined) {
        throw new LilaError(codes.INVALID_OPTION, `give "--${option.alias}" or "--${option.name}", not both: they are one option`);
      }
      result[option.alias] = value;
    } else if (option.action !== undefined) result.actions[option.action] = value;
    else if (option.key === undefined) result[option.name] = value;
    else result.proxy[option.key] = value;
  }
  return result;
}

/**
 * Takes the options of several words (`words` in the table: `--respond 200
 * ok`, `--rewrite REGEX REPLACEMENT`) out of `args`, before `util.parseArgs`
 * reads the rest.
 *
 * @param {string[]} args
 * @returns {{args: string[], values: Record<string, string[] | string[][]>}} `values` by option name:
 *   its words, or a list of them for a `multiple` option
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION` for one given fewer words than it takes
 */
function takeWords(args) {
  let rest = null;
  const values = {};
  for (let i = 0; i < args.length; i++) {
    const option = args[i].startsWith('--') ? WORDS.get(args[i].slice(2)) : undefined;
    if (option === undefined) {
      if (rest !== null) rest.push(args[i]);
      continue;
    }
    rest ??= args.slice(0, i);
    const { min, max, more } = option.words;
    const words = [];
    while (words.length < max && i + 1 < args.length) {
      const next = args[i + 1];
      if (words.length >= min ? !more.test(next) || next.startsWith('--') : next.startsWith('--')) break;
      words.push(next);
      i++;
    }
    if (words.length < min) throw new LilaError(codes.INVALID_OPTION, `"--${option.name}" needs ${option.arg}`);
    if (values[option.name] !== undefined && option.multiple !== true) {
      throw new LilaError(codes.INVALID_OPTION, `"--${option.name}" is given twice`);
    }
    values[option.name] = option.multiple === true ? [...(values[option.name] || []), words] : words;
  }
  return { args: rest === null ? args : rest, values };
}

/**
 * Refuses, before `util.parseArgs` reads them, the words with one dash that it would read
 * otherwise than meant: `-port 80` is `-p` given "ort", `-xyz` the unknown `-x`.
 * A group of short options (`-hV`) and a short one with its value (`-p8080`) are left to it.
 *
 * @param {string[]} args what `takeWords` leaves
 * @throws {LilaError} `LILA_ERR_INVALID_OPTION`: `"-port" is not an option: long options take
 *   two dashes, as in --port`
 */
function checkDashes(args) {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--') return;
    // The value of the option before it: parseArgs says what is wrong with that.
    if (!/^-[^-]./.test(arg) || (i > 0 && takesValue(args[i - 1]))) continue;
    const name = arg.slice(1).split('=')[0];
    const problem = `"-${name}" is not an option: long options take two dashes`;
    if (LONG_NAMES.includes(name)) throw new LilaError(codes.INVALID_OPTION, `${problem}, as in --${name}`);
    const near = /^[a-z][a-z0-9-]*$/i.test(name) ? closest(name, LONG_NAMES) : undefined;
    if (near !== undefined) throw new LilaError(codes.INVALID_OPTION, `${problem}; did you mean --${near}?`);
    const unknown = unknownShort(arg.slice(1));
    if (unknown !== null) throw new LilaError(codes.INVALID_OPTION, `${problem}, and -${unknown} is not a short one`);
  }
}

/**
 * Turns a `util.parseArgs` error into lila's one-line message.
 *
 * @param {Error & {code?: string}} err
 * @param {string[]} [names] the long options parseArgs was given, for `did you mean --port?`
 *   after an unknown one; none said without them
 * @returns {string}
 */
function argumentProblem(err, names = []) {
  // The first quoted part names the option: '--foo', or '-p, --port <value>'.
  const quoted = /'([^']*)'/.exec(err.message);
  let name = quoted === null ? '' : quoted[1].split(', ').pop().replace(' <value>', '');
  const long = OPTIONS.find((option) => option.short !== undefined && `-${option.short}` === name);
  if (long !== undefined) name = `--${long.name}`;
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    return `unknown option "${name}"${name.startsWith('--') ? didYouMean(name.slice(2), names, '--') : ''}`;
  }
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (err.message.includes('does not take')) return `"${name}" does not take a value`;
    if (err.message.includes('ambiguous')) {
      return `"${name}" needs a value; for a value that starts with "-", write ${name}=<value>`;
    }
    return `"${name}" needs a value`;
  }
  return err.message;
}

// The options of several words, by name.
const WORDS = new Map(OPTIONS.filter((option) => option.words !== undefined).map((option) => [option.name, option]));
/** Every option's long name, in the table's order: what a mistyped one is compared with. */
const LONG_NAMES = OPTIONS.map((option) => option.name);
const BY_SHORT = new Map(OPTIONS.filter((option) => option.short !== undefined).map((option) => [option.short, option]));

module.exports = { OPTIONS, GROUPS, SCOPE_TEXT, scopeText, LONG_NAMES, parseArgsOptions, readOptions, takeWords, checkDashes, argumentProblem };

// Whether a word (`--port`, `-p`, without `=value`) is an option given its value in the next word.
function takesValue(word) {
  const option = word.startsWith('--') ? OPTIONS.find((o) => o.name === word.slice(2)) : BY_SHORT.get(word.slice(1));
  return option !== undefined && option.arg !== undefined && !word.includes('=') && (word.startsWith('--') || word.length === 2);
}

// The first letter after one dash that parseArgs would read as an unknown short option, or
// null when all are short options: flags (-hV), up to one that takes the rest as its value (-p8080).
function unknownShort(letters) {
  for (const letter of letters) {
    const option = BY_SHORT.get(letter);
    if (option === undefined) return letter;
    if (option.arg !== undefined) return null;
  }
  return null;
}

// A default in milliseconds as the user writes it: 5s, 500ms, 0.
function ms(value) {
  if (value === 0) return '0';
  return value % 1000 === 0 ? `${value / 1000}s` : `${value}ms`;
}

function duration(text, flag) {
  return validateDuration(text, flag);
}

function durationOrZero(text, flag) {
  return validateDuration(text, flag, { allowZero: true });
}

// --layer: equilibrio's layer4 and layer7 are tcp and http.
function layer(text, flag) {
  if (text === 'layer4') return 'tcp';
  if (text === 'layer7') return 'http';
  return validateChoice(text, LAYERS, flag);
}

function notEmpty(text, flag) {
  if (text === '') throw new LilaError(codes.INVALID_OPTION, `"${flag}" must not be empty`);
  return text;
}

// --workers n or auto (the cores this process may use).
function workerCount(text, flag) {
  if (text === 'auto') return os.availableParallelism();
  const count = validateCount(text, flag, 1);
  if (count > MAX_WORKERS) {
    throw new LilaError(codes.INVALID_OPTION, `"${flag}" must be auto or an integer from 1 to ${MAX_WORKERS}, received "${text}"`);
  }
  return count;
}

// --admin and --redirect-http: [host:]port, [v6addr]:port included.
// The account's contact: an address a CA accepts as a mailto: URI.
function acmeEmail(text, flag) {
  if (!/^[^\s@:,<>]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$/.test(text)) {
    throw new LilaError(codes.INVALID_OPTION, `"${flag}" is the ACME account's email address, received "${text}"`);
  }
  return text;
}

function acmeDirectory(text, flag) {
  if (ACME_DIRECTORIES[text] !== undefined) return ACME_DIRECTORIES[text];
  let url;
  try {
    url = new URL(text);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new LilaError(codes.INVALID_OPTION, `"${flag}" is an https URL or one of ${Object.keys(ACME_DIRECTORIES).join(', ')}, received "${text}"`);
  }
  return text;
}

function acmeEab(text, flag) {
  const colon = text.indexOf(':');
  if (colon <= 0 || !/^[A-Za-z0-9_-]+={0,2}$/.test(text.slice(colon + 1))) {
    throw new LilaError(codes.INVALID_OPTION, `"${flag}" is KID:HMAC, the HMAC key base64url, received "${text}"`);
  }
  return { kid: text.slice(0, colon), hmacKey: text.slice(colon + 1).replace(/=+$/, '') };
}

function acmeChallenges(text, flag) {
  const types = text.split(',').map((type) => type.trim());
  if (types.length === 0 || types.some((type) => !ACME_CHALLENGES.includes(type)) || new Set(types).size !== types.length) {
    throw new LilaError(codes.INVALID_OPTION, `"${flag}" is a list of ${ACME_CHALLENGES.join(', ')}, received "${text}"`);
  }
  return types;
}

// --acme-dns: rfc2136://host:port or exec:FILE.
function acmeDns(text, flag) {
  if (text.startsWith('exec:') && text.length > 5) return { kind: 'exec', file: text.slice(5) };
  const match = /^rfc2136:\/\/(?:\[([^\]]+)\]|([^:/[\]]+)):([0-9]{1,5})\/?$/.exec(text);
  if (match === null) throw new LilaError(codes.INVALID_OPTION, `"${flag}" is rfc2136://HOST:PORT or exec:FILE, received "${text}"`);
  return { kind: 'rfc2136', host: match[1] === undefined ? match[2] : match[1], port: validatePort(match[3], flag) };
}

function acmeDnsTsig(text, flag) {
  try {
    return parseTsigKey(text);
  } catch (err) {
    throw new LilaError(codes.INVALID_OPTION, `"${flag}": ${err.message}`);
  }
}

function hostAndPort(text, flag) {
  const colon = text.lastIndexOf(':');
  let host = colon === -1 ? undefined : text.slice(0, colon);
  if (host !== undefined && host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const port = validatePort(colon === -1 ? text : text.slice(colon + 1), flag);
  if (host === '') throw new LilaError(codes.INVALID_OPTION, `"${flag}" must be [host:]port, received "${text}"`);
  return { host, port, text };
}
