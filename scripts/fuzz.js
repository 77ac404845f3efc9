'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { randomInt } = require('node:crypto');

const HELP = `Usage: npm run fuzz -- [--minutes N] [--runs FACTOR] [--only NAME]

Runs the property tests (test/*-properties.test.js) again and again, each
round with a new random seed and FACTOR times the runs CI makes, until N
minutes have passed. CI runs the same properties with one fixed seed.

  --minutes N     how long to go on (default 1)
  --runs FACTOR   runs per property, as a multiple of CI's (default 20)
  --only NAME     only the property files whose name contains NAME
  --help          this text

A failure stops the fuzzing and prints its seed, its path and the command
that replays it; make it a fixed case in the test file. A round that prints
nothing for 2 minutes is stopped as a hang, with its seed.

Exit codes: 0 no failure found, 1 a failure or a hang found, 2 bad usage.
`;
const TEST_DIR = path.join(__dirname, '..', 'test');
const MOCHA = require.resolve('mocha/bin/mocha.js');
const STALL_MS = 120000;

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});

async function main(argv) {
  let options;
  try {
    options = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`fuzz: ${err.message}\n`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const files = fs.readdirSync(TEST_DIR)
    .filter((name) => name.endsWith('-properties.test.js') && name.includes(options.only))
    .map((name) => path.join('test', name));
  if (files.length === 0) {
    process.stderr.write(`fuzz: no property file matches "${options.only}"\n`);
    return 2;
  }
  const deadline = Date.now() + options.minutes * 60000;
  let rounds = 0;
  process.stdout.write(`fuzz: ${files.join(', ')} for ${options.minutes} min, ${options.runs}x CI's runs\n`);
  do {
    const seed = randomInt(-(2 ** 31), 2 ** 31);
    const started = Date.now();
    const round = await runRound(files, seed, options.runs);
    rounds++;
    if (round.stalled) {
      process.stdout.write(`${round.output}\nfuzz: round ${rounds} printed nothing for ${STALL_MS / 1000} s and was stopped: seed ${seed}\n` +
        `replay: LILA_PROPERTY_SEED=${seed} LILA_PROPERTY_RUNS=${options.runs} npx mocha --timeout 0 ${files.join(' ')}\n`);
      return 1;
    }
    if (round.code !== 0) {
      process.stdout.write(`${round.output}\nfuzz: round ${rounds} failed: seed ${seed} (the path of each failure is above)\n` +
        `replay: LILA_PROPERTY_SEED=${seed} LILA_PROPERTY_RUNS=${options.runs} LILA_PROPERTY_PATH=<path> npx mocha --timeout 0 <file> --grep "<test>"\n`);
      return 1;
    }
    process.stdout.write(`fuzz: round ${rounds}, seed ${seed}: passed in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  } while (Date.now() < deadline);
  process.stdout.write(`fuzz: ${rounds} rounds, no failure\n`);
  return 0;
}

function parseArgs(argv) {
  const options = { minutes: 1, runs: 20, only: '', help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      options.help = true;
    } else if (arg === '--minutes' || arg === '--runs') {
      const value = Number(argv[++i]);
      if (!(value > 0) || (arg === '--runs' && !Number.isInteger(value))) {
        throw new Error(`"${arg}" must be a positive ${arg === '--runs' ? 'integer' : 'number'}, received "${argv[i]}"`);
      }
      options[arg.slice(2)] = value;
    } else if (arg === '--only') {
      if (argv[i + 1] === undefined) throw new Error('"--only" needs a name');
      options.only = argv[++i];
    } else {
      throw new Error(`unknown argument "${arg}" (see --help)`);
    }
  }
  return options;
}

// One mocha run of the property files with this seed; stopped when it prints nothing for STALL_MS.
function runRound(files, seed, runs) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MOCHA, '--no-package', '--throw-deprecation', '--timeout', '0', ...files], {
      cwd: path.join(__dirname, '..'),
      env: { ...process.env, LILA_PROPERTY_SEED: String(seed), LILA_PROPERTY_RUNS: String(runs), LILA_PROPERTY_PATH: '' },
      stdio: ['ignore', 'pipe', 'pipe']
    });
    let output = '';
    let stalled = false;
    let timer = null;
    const watch = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        stalled = true;
        child.kill('SIGKILL');
      }, STALL_MS);
    };
    const take = (chunk) => {
      output += chunk;
      watch();
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    watch();
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stalled, output });
    });
  });
}
