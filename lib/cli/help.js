'use strict';

const { OPTIONS, GROUPS } = require('../config/options');
const { strategies } = require('../balancing/strategies');

const WIDTH = 80;
// Where an option's description starts.
const INDENT = 24;
// What `push` takes besides its file, in the order its help lists them.
const PUSH_OPTIONS = ['store-ca', 'store-cert', 'store-key', 'store-insecure', 'if-revision'];
// Where an option goes in a config file, as `--help` tags it, by its scope (none: the command line only).
const SCOPE_TAGS = {
  global: '[global]', pool: '[pool]', listener: '[listen]', layer: '[pool, listen]', route: '[route]', 'listener-route': '[listen or route]',
  match: '[route line]'
};

const HEAD = `Usage: lila <mode> <server> [server ...] [options]
       lila <mode> --hosts <file> [options]
       lila --config <file> [options]
       lila <port>   round-robin over tcp on <port> to the servers of ./hosts
       lila --check --config <file>   checks a config file whole, starts nothing
       lila push <file> --store <url>   writes a config file to a fleet's store
       lila hash-password [--user <name>]   hashes a password for --basic-auth
       lila help [config | push | hash-password]   the help of each

lila puts one address in front of many backends and balances requests (http)
or connections (tcp) across them.

Modes:
  round-robin         each backend in turn, in proportion to its weight
                      (nginx's smooth weighted round-robin)
  least-connections   the fewest active requests (http) or connections (tcp)
                      per unit of weight; on a tie, the one picked longest ago
  ip-hash             the client's IP picks the backend (consistent hashing)
  hash                a key picks the backend, see --hash-key; requests
                      without the key go round-robin
  random              a random backend, in proportion to its weight
  p2c                 two random backends, the one with fewer active requests
                      per unit of weight (power of two choices)
  ewma                two random backends, the one with the lower peak-EWMA
                      response time times its active requests
  ./my-balancer.js    a path: your own module, a class with pick(context)

Servers:
  host:port, 1.2.3.4:port or [v6addr]:port, e.g. localhost:8001 or [::1]:8001.
  Parameters may follow after commas:
    weight=N    0 to 1000 (default 1); 0 takes the backend out of new picks
    backup      gets traffic only while no other backend is available
    name=X      call the backend X (logs, admin API) instead of host:port
    tls         connect to the backend over TLS, verifying its certificate
    sni=NAME    the server name sent to a tls backend (default: its host)
    h2          speak HTTP/2 to the backend (h2c; with tls, ALPN h2): one
                multiplexed session, every request a stream (gRPC)
    maxconn=N   at most N requests (http) or connections (tcp) at once; the
                rest wait in the queue (default --max-conns)
    send-proxy, send-proxy-v2
                send the backend a PROXY protocol header (v1, v2) first
    resolve     every address of the host's DNS name is a backend, named
                host:port@address, looked up again as its TTL runs out
  srv:_service._proto.name, e.g. srv:_http._tcp.api.service.consul: the
  targets and ports of its DNS SRV records are the backends; the lowest
  priority value gives the primaries, higher ones backups
  Or in a hosts file, one a line, parameters after spaces, # for comments:
    10.0.0.1:8080 weight=3 name=api-1

Config file: several pools, listeners and routes (lila --config lila.conf, or
lila alone where ./lila.conf is); "lila help config" tells all of it:
  --admin 127.0.0.1:9000              a global option, on a line of its own
  pool web round-robin 10.0.0.1:8080  pool NAME MODE [SERVER ...] [OPTIONS]
    10.0.0.2:8080 weight=3            indented below: servers, or options
  listen 443 --tls-cert site.pem      listen [ADDRESS:]PORT [OPTIONS]
    route api.example.com/v1 api      route MATCH TARGET [OPTIONS], indented
    route * web                       under its listen line
  MATCH is HOST[/PATH] or /PATH, *.suffix (any name under suffix) or * (any
  host); =/PATH is an exact path, ~REGEX a regular expression; TARGET is a
  pool, or a weighted split between pools: a=90 b=10.
  Each option below says where it goes in the file: [pool], [listen], [route]
  (a route line, or a listen line for all its routes), [route line] or
  [global] (a line of its own); one without is for the command line only.
  A layer before the place ([http pool]) is the only one the option acts in:
  elsewhere lila ignores it with a warning, or refuses it (--sticky on tcp).
`;

const TAIL = `
Durations: a number with ms, s, m or h, e.g. 500ms, 5s, 2m; a number without a
unit is milliseconds, e.g. 1500.

Signals:
  SIGTERM, SIGINT  stop accepting, drain, exit 0; a second one exits at once
  SIGHUP           reload the config file (or the hosts file) and the TLS
                   certificates; a bad file keeps what runs

Examples:
  lila round-robin localhost:8001 localhost:8002 localhost:8003
  lila hash --hash-key query:id a.local:8080,weight=40 b.local:8080,weight=60
  lila least-connections --layer tcp 10.0.0.1:5432 10.0.0.2:5432 -p 5432
  lila p2c --hosts /etc/lila/hosts --watch --health-check --admin 9000
  lila --config /etc/lila/lila.conf --watch

Exit status:
  0  stopped by SIGINT or SIGTERM, or --help / --version
  1  runtime failure, e.g. the port is in use
  2  usage error
`;

const CONFIG_HEAD = `Usage: lila --config <file> [global options]
       lila --check --config <file>    check all of it, exit 0 (good) or 2
       lila                            reads ./lila.conf when it exists

A config file gives one lila several pools of backends, listeners, and
routes from what a listener receives to the pools. It is the command line
written as lines: the same modes, servers and options.

  # lila.conf
  --admin 127.0.0.1:9000
  --log-format json

  pool api p2c --health-check --max-conns 100
    10.0.0.1:8080 weight=3
    10.0.0.2:8080
    --health-path /healthz
  pool canary round-robin 10.0.0.9:8080
  pool web least-connections srv:_http._tcp.web.service.consul
  pool pg least-connections --layer tcp 10.0.0.5:5432

  listen 443 --tls-cert /etc/lila/certs --redirect-http 80
    route api.example.com/v1 api=95 canary=5 --hash-key cookie:user
    route api.example.com/old --redirect https://api.example.com/v1 301
    route *.example.com web
    route * web
  listen 127.0.0.1:5432 --layer tcp
    route * pg

Lines:
  --OPTION [VALUE] ...
      Global options (see Where options go), on lines of their own; given on
      the command line too, the command line's win.
  pool NAME MODE [SERVER ...] [OPTIONS]
      A pool of backends. NAME holds letters, digits, ".", "_" and "-"; MODE
      is as on the command line (round-robin, p2c, ..., ./my-balancer.js).
      Indented below it: a server a line, its parameters after spaces as in
      a hosts file (10.0.0.1:8080 weight=3 backup), or options.
  listen [ADDRESS:]PORT [OPTIONS]
      A listener: 443, 127.0.0.1:8080 or [::1]:8080. Indented below it: its
      routes (at least one) and options.
  route MATCH TARGET [OPTIONS]
      Indented under its listen line: the requests that MATCH go to TARGET.
      MATCH   HOST, HOST/PATH or /PATH; *.suffix for any name under suffix
              (a.example.com, a.b.example.com, not example.com); * for any
              host. A path is a prefix (/api), exact (=/login) or a
              regular expression ("~^/users/[0-9]+$"), after a host or
              alone. The exact host wins, then the longest *.suffix, then
              the routes without a host; within a host, an exact path, then
              regular expressions in file order, then the longest prefix on
              a "/" boundary (/api matches /api/users, not /apix). Routes
              of one path: a --match-method first, then more --match-header
              and --match-cookie, then more --match-query, then the first
              line; one whose conditions fail passes the request on to the
              next. No match: 404 (http) or closed (tcp). A tcp listener
              matches the TLS server name (SNI), not a path.
      TARGET  a pool, or a weighted split between pools (api=95 canary=5)
              that keeps each key in one pool with --hash-key. A route that
              answers itself (--redirect, --respond) needs no TARGET.

Indentation: a line that starts with spaces or tabs belongs to the last line
that does not; how deep does not matter, and there is one level only.

Comments: # where a word would start, to the end of the line.

Quoting, as in a POSIX shell: '...' keeps everything; "..." keeps all but
\\", \\\\, \\$ and \\\` (a backslash before them); a backslash keeps the next
character. Nothing is expanded ($, *, ~ are plain), and a line never goes on
to the next one:
    route * web --response-header "X-Frame-Options: DENY"

Where options go (their [scope] in lila --help):
`;

const HASH_PASSWORD_HELP = `Usage: lila hash-password [--user <name>]

Reads a password and prints its hash for a --basic-auth file: scrypt, as
$scrypt$ln=15,r=8,p=1$<salt>$<hash>. On a terminal the password is typed twice,
without echo; from a pipe, its first line is the password
(echo "$PASSWORD" | lila hash-password).

Options:
  -u, --user <name>  print a whole line of the file, <name>:<hash>
  -h, --help         print this help

Exit codes: 0 printed; 2 a usage error (unknown option, a user name with ":",
an empty password, two different passwords typed).
`;

const PUSH_HEAD = `Usage: lila push <file> --store <url> [--if-revision <n>] [options]

Checks a config file whole, as lila --check does (its pools, listeners,
routes and certificates), then writes it to the store's <prefix>/config,
which every member of the fleet (each lila --store <url>) then runs. It
writes only over the revision it read just before, or over --if-revision's:
two writers never undo each other without a word. doc/fleet.md tells the
fleet all.

  lila push lila.conf --store etcd://10.0.0.5:2379
  lila push lila.conf --store etcds://etcd.internal:2379/lila --store-ca ca.pem

Options:
  --store <url>         etcd://[user[:pass]@]host:port[,host:port]/prefix
                        (prefix /lila; etcds:// for TLS; the password also
                        from LILA_STORE_PASSWORD)
`;

const PUSH_TAIL = `  -h, --help            print this help

Exit status:
  0  written: the summary of what it holds, and its revision
  1  not written: someone wrote it meanwhile, or the store did not answer
  2  usage error, or a mistake in the file (named by file:line)
`;

const HELP_HELP = `Usage: lila help [topic]     (or lila --help [topic])

lila help                 every option, by group, and where it goes in a
                          config file
lila help config          the config file: pools, listeners and routes
lila help push            lila push: a config file written to a fleet's store
lila help hash-password   lila hash-password: a password's hash for --basic-auth
lila help help            this
`;

const CONFIG_TAIL = `
Reload: SIGHUP, or a change with --watch, reads the whole file again, checks
all of it, and only then swaps it in: pools that did not change keep their
backends' state; a bad file keeps what runs, and the log says why.
A mistake names file:line and exits 2.
`;

/**
 * The text of `lila --help`: the modes and servers, the config file in
 * short, every option of the table by group (with where it goes in a config
 * file), signals, examples and exit codes.
 *
 * @returns {string}
 */
function helpText() {
  let text = HEAD;
  for (const [group, title] of Object.entries(GROUPS)) {
    text += `\n${title}:\n`;
    for (const option of OPTIONS) {
      if (option.group === group) text += optionLines(option);
    }
  }
  return text + TAIL;
}

/**
 * The text of `lila help config`: the config file's grammar, every kind of
 * line with an example, indentation, comments and quoting, and the options
 * each kind of line takes, from the option table.
 *
 * @returns {string}
 */
function configHelpText() {
  const names = (scope) => OPTIONS.filter((option) => option.scope === scope).map((option) => `--${option.name}`);
  const list = (scope) => wrap(names(scope), WIDTH - 4).map((line) => `    ${line}\n`).join('');
  return CONFIG_HEAD +
    `  [global] a line of its own, or the command line beside --config:\n${list('global')}` +
    `  [pool] a pool line, or an option line below it:\n${list('pool')}` +
    `  [listen] a listen line, or an option line below it:\n${list('listener')}` +
    `  [pool, listen] either: ${names('layer').join(' ')}\n` +
    '  [route] a route line, or a listen line for all of its routes (a route\'s\n' +
    '  own value wins, lists such as --request-header add up); a route line\n' +
    `  also takes --hash-key, the key of its split:\n${list('route')}` +
    '  [listen or route] a listen line, for its listener\'s own limit, or a route\n' +
    `  line, for that route's own, counted apart:\n${list('listener-route')}` +
    `  [route line] a route line only: conditions a request must meet, all of\n  them, to take the route:\n${list('match')}` +
    `  The command line only:\n${list('command')}` +
    CONFIG_TAIL;
}

/**
 * How an option is written in the help and in README: `-p, --port <n>`.
 *
 * @param {{name: string, short?: string, arg?: string}} option
 * @returns {string}
 */
function optionSignature(option) {
  const short = option.short === undefined ? '' : `-${option.short}, `;
  return `${short}--${option.name}${option.arg === undefined ? '' : ` ${option.arg}`}`;
}

/**
 * The five lines `lila` alone prints (with no ./hosts or ./lila.conf to
 * serve): how to start, and where the rest is.
 *
 * @returns {string}
 */
function usageText() {
  return `Usage: lila <mode> <server> [server ...] [options]
       lila <mode>    the servers in ./hosts, one a line (or --hosts <file>)
       lila           pools, listeners and routes in ./lila.conf (or --config)
Modes: ${Object.keys(strategies).join(', ')}
Try "lila round-robin localhost:8001 localhost:8002", or "lila --help".
`;
}

/**
 * The text of `lila push --help` (and `lila help push`): what it checks and
 * writes, its store options from the option table, and its exit codes.
 *
 * @returns {string}
 */
function pushHelpText() {
  let text = PUSH_HEAD;
  for (const name of PUSH_OPTIONS) text += optionLines(OPTIONS.find((option) => option.name === name), false);
  return text + PUSH_TAIL;
}

// What `lila help <topic>` and `lila --help <topic>` know: each subcommand's help, and the config file's.
const HELP_TOPICS = {
  config: configHelpText,
  push: pushHelpText,
  'hash-password': () => HASH_PASSWORD_HELP,
  help: () => HELP_HELP
};

/**
 * The help of a topic, or the whole help.
 *
 * @param {string} [topic] one of `HELP_TOPICS`' names; undefined: `lila --help`'s
 * @returns {string}
 */
function helpOfTopic(topic) {
  return topic === undefined ? helpText() : HELP_TOPICS[topic]();
}

module.exports = { helpText, configHelpText, pushHelpText, helpOfTopic, usageText, optionSignature, HELP_TOPICS, HASH_PASSWORD_HELP };

// The signature, then the description wrapped at WIDTH from INDENT; on a line
// of its own when the signature leaves no room. `tagged`: with where it goes in a config file.
function optionLines(option, tagged = true) {
  const signature = `  ${optionSignature(option)}`;
  const words = option.help.split(' ');
  // Flags are off unless given; "(default 60s)" is never split over two lines.
  if (option.arg !== undefined && !/^(|none|off.*)$/.test(option.default)) words.push(`(default ${option.default})`);
  // A route line takes --hash-key too, the key of its split (config/config-file.js).
  const tag = option.name === 'hash-key' ? '[pool, route]' : SCOPE_TAGS[option.scope];
  // The layers it acts in, when not every one: [http pool], [http or tcp listen].
  if (tag !== undefined && tagged) words.push(option.layers === undefined ? tag : `[${option.layers.join(' or ')} ${tag.slice(1)}`);
  const lines = wrap(words, WIDTH - INDENT);
  const pad = ' '.repeat(INDENT);
  let out = signature.length <= INDENT - 2 ? `${signature.padEnd(INDENT)}${lines.shift()}\n` : `${signature}\n`;
  for (const line of lines) out += `${pad}${line}\n`;
  return out;
}

function wrap(words, width) {
  const lines = [];
  let line = '';
  for (const word of words) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return lines;
}
