'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

// Where `--write` puts a run in bench/README.md: between its markers, or in a new section.
const SECTIONS = {
  plain: { marker: 'bench:compare', heading: 'Comparison' },
  tls: { marker: 'bench:compare-tls', heading: 'HTTPS comparison' },
  h2: { marker: 'bench:compare-h2', heading: 'HTTP/2 and gRPC' }
};
// lila's ratios are taken to these, where both were measured.
const PEERS = {
  http: ['nginx http', 'node-http-proxy', 'haproxy http'],
  // net pipe first: issue 7 asks lila's tcp layer to be at least as fast as plain net piping.
  tcp: ['net pipe', 'nginx stream', 'haproxy tcp'],
  https: ['nginx https', 'haproxy https'],
  h2: ['nginx h2', 'haproxy h2'],
  grpc: ['nginx grpc', 'haproxy grpc']
};
const NGINX_OF_LAYER = { http: 'nginx http', tcp: 'nginx stream', https: 'nginx https', h2: 'nginx h2', grpc: 'nginx grpc' };

/**
 * @typedef {object} Sample one measured run of bench/load.js
 * @property {number} rps autocannon's average requests per second
 * @property {number} requests requests in the measured run
 * @property {number} p50 ms
 * @property {number} p99 ms
 * @property {number} errors errors + timeouts + non-2xx
 * @property {number | null} cpu proxy CPU seconds in the measured run; null for direct
 * @property {number} [resumed] the share of new TLS connections resumed (bench/tls-load.js only)
 */

/**
 * bench/compare.js's report, in markdown: the command, the setup, then the
 * medians of every target and load, lila's ratios to its peers (another
 * checkout's lila, a target with `of`: its ratios to the working tree's), and
 * memory per idle connection. `vs direct` is `-` when direct (layer null) was not
 * measured (`--only`); a target not run at a load has no row there. A load
 * with a `goal` adds it to the ratios to nginx, with `ok` or `MISS`.
 *
 * @param {object} results
 * @param {string[]} results.setup paragraphs describing the machine and the run
 * @param {{name: string, goal?: number}[]} results.loads `goal`: lila's req/CPU-s over nginx's at least that
 * @param {{name: string, layer: 'http' | 'https' | 'tcp' | 'h2' | 'grpc' | null, of?: string}[]} results.targets
 *   `of`: the working tree's target this one is another lila's of (`lila http fast` for `lila http fast @b124524`)
 * @param {Map<string, Sample[]>} results.samples by `sampleKey(target, load)`
 * @param {object[] | null} results.idle `{target, open, before, after}`, memory from proc-stats; null: not measured
 * @param {string[]} results.notes what was skipped or changed, and why
 * @returns {string}
 */
function formatReport({ setup, loads, targets, samples, idle, notes }) {
  const medians = new Map();
  for (const [key, list] of samples) medians.set(key, summarize(list));
  const lines = [
    '```',
    `$ ${commandLine()}`,
    '```',
    '',
    ...setup,
    '',
    ...throughputTable(loads, targets, medians),
    '',
    ...ratioTable(loads, targets, medians),
    '',
    ...(idle === null ? [] : [...idleTable(idle), ''])
  ];
  if (notes.length > 0) lines.push(...notes.map((note) => `- ${note}`), '');
  return lines.join('\n');
}

/**
 * One line on what ran: CPU model and cores (lscpu), Linux, Node, the lila
 * commit, the peers' versions, the date.
 *
 * @param {{nginx: string | null, haproxy: string | null}} executables
 * @returns {string}
 */
function describeMachine({ nginx, haproxy }) {
  const lscpu = spawnSync('lscpu', { encoding: 'utf8' }).stdout || '';
  const model = /^Model name:\s+(.+)$/m.exec(lscpu);
  const cpus = /^CPU\(s\):\s+(\d+)$/m.exec(lscpu);
  const name = model === null ? os.cpus()[0].model : model[1].trim();
  const versions = [lilaRevision()];
  if (nginx !== null) {
    const version = /nginx\/(\S+)/.exec(spawnSync(nginx, ['-v'], { encoding: 'utf8' }).stderr || '');
    if (version !== null) versions.push(`nginx ${version[1]}`);
  }
  if (haproxy !== null) {
    const version = /version (\d+\.\d+\.\d+)/.exec(spawnSync(haproxy, ['-v'], { encoding: 'utf8' }).stdout || '');
    if (version !== null) versions.push(`HAProxy ${version[1]}`);
  }
  versions.push(`autocannon ${require('autocannon/package.json').version}`);
  versions.push(`http-proxy ${require('http-proxy/package.json').version}`);
  return `${name}, ${cpus === null ? os.cpus().length : cpus[1]} cores (lscpu), Linux ${os.release().split('-')[0]}, ` +
    `Node ${process.version}; ${versions.join(', ')}; ${new Date().toISOString().slice(0, 10)}.`;
}

/**
 * One sentence on the lilas of other checkouts a run measures besides the
 * working tree's: the name each goes by, its executable, and its commit.
 *
 * @param {{name: string, path: string}[]} lilas
 * @returns {string}
 */
function describeLilas(lilas) {
  const each = lilas.map(({ name, path: file }) => `\`@${name}\` ${file} (${lilaRevision(path.dirname(file))})`);
  return `Other lilas (\`--lila\`), named after \`@\` in the tables: ${each.join('; ')}.`;
}

/**
 * Puts `report` between a section's comment markers in a markdown file
 * (`bench:compare` for plain runs, `bench:compare-tls` for `--tls`,
 * `bench:compare-h2` for `--h2`), or in a new section at its end
 * (`## Comparison`, `## HTTPS comparison`, `## HTTP/2 and gRPC`).
 *
 * @param {string} file
 * @param {string} report
 * @param {'plain' | 'tls' | 'h2'} [section]
 */
function writeSection(file, report, section = 'plain') {
  const { marker, heading } = SECTIONS[section];
  const opening = `<!-- ${marker} begin -->`;
  const closing = `<!-- ${marker} end -->`;
  const text = fs.readFileSync(file, 'utf8');
  const block = `${opening}\n${report}${closing}`;
  const begin = text.indexOf(opening);
  const end = text.indexOf(closing);
  const updated = begin !== -1 && end > begin
    ? text.slice(0, begin) + block + text.slice(end + closing.length)
    : `${text.trimEnd()}\n\n## ${heading}\n\n${block}\n`;
  fs.writeFileSync(file, updated);
}

/**
 * The key of a target's samples at one load.
 *
 * @param {{name: string}} target
 * @param {{name: string}} load
 * @returns {string}
 */
function sampleKey(target, load) {
  return `${target.name}\t${load.name}`;
}

/**
 * The median of numbers: the mean of the middle two for an even count.
 *
 * @param {number[]} values not empty
 * @returns {number}
 */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * One line of a plain-text table: the first cell padded on the right, the
 * others on the left, to their columns' widths, two spaces apart.
 *
 * @param {[string, number][]} columns `[title, width]` each
 * @param {any[]} cells
 * @returns {string}
 */
function textRow(columns, cells) {
  return cells.map((cell, i) => (i === 0 ? String(cell).padEnd(columns[i][1]) : String(cell).padStart(columns[i][1]))).join('  ');
}

/**
 * The first two lines of a plain-text table: the columns' titles, then a rule under each.
 *
 * @param {[string, number][]} columns `[title, width]` each
 * @returns {string[]}
 */
function textHeader(columns) {
  return [textRow(columns, columns.map(([title]) => title)), textRow(columns, columns.map(([, width]) => '-'.repeat(width)))];
}

module.exports = { formatReport, describeMachine, describeLilas, lilaRevision, writeSection, sampleKey, median, textHeader, textRow };

// Every column's median over the rounds; errors add up.
function summarize(list) {
  const perCpu = list.filter((s) => s.cpu !== null && s.cpu > 0).map((s) => s.requests / s.cpu);
  return {
    rps: median(list.map((s) => s.rps)),
    p50: median(list.map((s) => s.p50)),
    p99: median(list.map((s) => s.p99)),
    errors: list.reduce((sum, s) => sum + s.errors, 0),
    cpu: list[0].cpu === null ? null : median(list.map((s) => s.cpu)),
    perCpu: perCpu.length === 0 ? null : median(perCpu),
    resumed: list[0].resumed === undefined ? null : median(list.map((s) => s.resumed))
  };
}

// A `resumed` column (the share of new TLS connections resumed) when some load made new TLS connections.
function throughputTable(loads, targets, medians) {
  const rows = [];
  const baseline = targets.find((target) => target.layer === null);
  const tls = [...medians.values()].some((m) => m.resumed !== null);
  for (const load of loads) {
    const direct = (baseline === undefined ? undefined : medians.get(sampleKey(baseline, load))) || null;
    for (const target of targets) {
      const m = medians.get(sampleKey(target, load));
      if (m === undefined) continue;
      const resumed = tls ? [m.resumed === null ? '-' : `${Math.round(m.resumed * 100)}%`] : [];
      rows.push([
        target.name,
        load.name,
        Math.round(m.rps),
        m.p50.toFixed(2),
        m.p99.toFixed(2),
        m.errors,
        m.cpu === null ? '-' : m.cpu.toFixed(2),
        m.perCpu === null ? '-' : Math.round(m.perCpu),
        direct === null ? '-' : (m.rps / direct.rps).toFixed(2),
        ...resumed
      ]);
    }
  }
  const headers = ['target', 'load', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'proxy CPU s', 'req/CPU-s', 'vs direct'];
  return markdownTable(tls ? [...headers, 'resumed'] : headers, rows);
}

// Above 1, lila serves more per second or per CPU-second; a p99 above 1 is lila slower.
// Loads with a goal add `goal` and `result` columns, filled in for the ratios to nginx.
// Another checkout's lila is taken to the working tree's only: its ratios to the peers follow from those.
function ratioTable(loads, targets, medians) {
  const names = new Set(targets.map((target) => target.name));
  const pairs = [];
  for (const target of targets) {
    if (target.of !== undefined) pairs.push([target, target.of]);
    else if (target.name.startsWith('lila')) for (const peer of PEERS[target.layer]) pairs.push([target, peer]);
  }
  const goals = loads.some((load) => load.goal !== undefined);
  const rows = [];
  for (const [{ name, layer }, peer] of pairs.filter(([, b]) => names.has(b))) {
    for (const load of loads) {
      const a = medians.get(sampleKey({ name }, load));
      const b = medians.get(sampleKey({ name: peer }, load));
      if (a === undefined || b === undefined) continue;
      const perCpu = a.perCpu === null || b.perCpu === null ? null : a.perCpu / b.perCpu;
      const row = [
        `${name} / ${peer}`,
        load.name,
        (a.rps / b.rps).toFixed(2),
        perCpu === null ? '-' : perCpu.toFixed(2),
        (a.p99 / b.p99).toFixed(2)
      ];
      if (goals) {
        const goal = peer === NGINX_OF_LAYER[layer] && load.goal !== undefined ? load.goal : null;
        // The ratio as printed is what is judged.
        const met = goal !== null && perCpu !== null && Number(perCpu.toFixed(2)) >= goal;
        row.push(goal === null ? '-' : goal.toFixed(2), goal === null || perCpu === null ? '-' : met ? 'ok' : 'MISS');
      }
      rows.push(row);
    }
  }
  const headers = ['ratio', 'load', 'req/s', 'req/CPU-s', 'p99'];
  return markdownTable(goals ? [...headers, 'goal', 'result'] : headers, rows);
}

function idleTable(rows) {
  const perConnection = (row) => (row.after.rss - row.before.rss) / row.open;
  const table = rows.map((row) => {
    const nginx = rows.find((other) => other.target.name === NGINX_OF_LAYER[row.target.layer]);
    return [
      row.target.name,
      row.open,
      megabytes(row.before.rss),
      megabytes(row.after.rss),
      megabytes(row.after.peak),
      Math.round(perConnection(row)),
      nginx === undefined ? '-' : (perConnection(row) / perConnection(nginx)).toFixed(1)
    ];
  });
  const headers = ['idle connections', 'open', 'RSS before MB', 'RSS with them MB', 'peak MB', 'B/conn', 'vs nginx'];
  return markdownTable(headers, table);
}

function megabytes(bytes) {
  return (bytes / 1048576).toFixed(1);
}

// Padded, so that it reads as well in a terminal; the first two columns are text.
function markdownTable(headers, rows) {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => String(row[i]).length)));
  const cell = (value, i) => (i < 2 ? String(value).padEnd(widths[i]) : String(value).padStart(widths[i]));
  const line = (cells) => `| ${cells.map(cell).join(' | ')} |`;
  const rule = `| ${widths.map((width, i) => (i < 2 ? '-'.repeat(width) : `${'-'.repeat(width - 1)}:`)).join(' | ')} |`;
  return [line(headers), rule, ...rows.map(line)];
}

// Quoted where a shell needs it (`--only 'direct,lila tcp'`), so it can be run again as printed.
function commandLine() {
  const args = process.argv.slice(2).map(shellWord);
  if (process.env.npm_lifecycle_event === 'bench:compare') {
    return ['npm run bench:compare', ...(args.length > 0 ? ['--', ...args] : [])].join(' ');
  }
  return ['node', path.relative(process.cwd(), process.argv[1]), ...args].join(' ');
}

function shellWord(arg) {
  return /^[\w.,:/=@+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
}

// What was measured: a checkout's lib/ (the working tree's by default), which may differ from its last commit.
function lilaRevision(root = path.join(__dirname, '..')) {
  const git = (args) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' });
  const commit = git(['rev-parse', '--short', 'HEAD']);
  if (commit.status !== 0) return 'lila';
  const changed = git(['status', '--porcelain', '--', 'lib', 'lila']).stdout.trim() !== '';
  return `lila at ${commit.stdout.trim()}${changed ? ' (lib/ with uncommitted changes)' : ''}`;
}
