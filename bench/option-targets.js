'use strict';

const { spawnSync } = require('node:child_process');
const { LILA } = require('./children');

/**
 * The targets of a bench of one option's kinds (bench/hooks.js's hooks, bench/jwt.js's tokens), in the table's
 * order: the working tree's lila with each kind, then each other checkout's (`--lila NAME=PATH`, as `KIND @NAME`)
 * with each kind it can run: all of them when its `--help` names `option`, else the first alone (the option off).
 *
 * @param {{name: string, path: string}[]} lilas the other checkouts' lilas
 * @param {{name: string}[]} kinds the first: the option off
 * @param {string} option e.g. `--hook`
 * @returns {{name: string, lila: string, of: string | null, kind: object}[]} `of`: the other lila's name, null for the working tree's
 */
function optionTargets(lilas, kinds, option) {
  const all = [{ name: null, path: LILA }, ...lilas];
  return all.flatMap((lila) => {
    const runs = lila.name === null || takesOption(lila.path, option) ? kinds : [kinds[0]];
    return runs.map((kind) => ({ name: lila.name === null ? kind.name : `${kind.name} @${lila.name}`, lila: lila.path, of: lila.name, kind }));
  });
}

/**
 * The ratio lines: each kind over the same lila with the option off (with a goal when `goal` gives one), and
 * another lila with the option off over the working tree's.
 *
 * @param {ReturnType<typeof optionTargets>} list
 * @param {object} off the first kind
 * @param {(kind: object) => number | undefined} [goal]
 * @returns {{a: object, b: object, goal?: number}[]}
 */
function overOptionOff(list, off, goal = () => undefined) {
  const plain = (of) => list.find((t) => t.of === of && t.kind === off);
  return [
    ...list.filter((t) => t.kind !== off).map((a) => ({ a, b: plain(a.of), goal: goal(a.kind) })),
    ...list.filter((t) => t.of !== null && t.kind === off).map((a) => ({ a, b: plain(null) }))
  ];
}

module.exports = { optionTargets, overOptionOff };

// Whether a lila executable knows an option: an older checkout's may not.
function takesOption(file, option) {
  return new RegExp(`^\\s*${option}\\b`, 'm').test(spawnSync(process.execPath, [file, '--help'], { encoding: 'utf8' }).stdout || '');
}
