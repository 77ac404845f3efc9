'use strict';

const { OPTIONS } = require('./options');
const { layerOf } = require('../layers');

// The options a pool's or listener's layer may not act on (the table's `layers`), by their createProxy name.
const LAYERED = new Map(OPTIONS.filter((option) => option.layers !== undefined && option.key !== undefined).map((option) => [option.key, option]));

/**
 * What a pool or listener of `layer` was given that its layer does nothing
 * with (`--fail-on-5xx` on a tcp pool): ignored, as HAProxy ignores
 * `option httpchk` in TCP mode, and said. Only what the pool or listener
 * was given itself: a global option is a default, for the pools it fits.
 *
 * @param {Record<string, unknown>} options its options, by createProxy's names, as given
 * @param {string} layer its layer's name; one that is none (a program's, refused when built) ignores nothing
 * @returns {{name: string, layers: string[]}[]} the option table's entries, in the table's order
 */
function ignoredOptions(options, layer) {
  if (layerOf(layer) === undefined) return [];
  const given = Object.keys(options).filter((key) => options[key] !== undefined && LAYERED.has(key));
  return given.map((key) => LAYERED.get(key)).filter((option) => !option.layers.includes(layer))
    .sort((a, b) => OPTIONS.indexOf(a) - OPTIONS.indexOf(b));
}

/**
 * The warnings of a model's pools and listeners given options their layer
 * ignores, one a pool (or listener) and option: said at start, by
 * `--check` and on every reload, as the model's other warnings.
 *
 * @param {import('./config-model').ConfigModel & {single?: boolean}} model
 * @param {(line: number | undefined) => (problem: string) => Error} at where a line is (config-model's `at`)
 * @returns {string[]} e.g. `lila.conf:3: "--health-path" is ignored on pool "pg": it acts in the http layer only, and this pool is tcp`
 */
function layerWarnings(model, at) {
  const said = (where, on, what, layer) => (option) => at(where)(
    `"--${option.name}" is ignored${on}: it acts in the ${option.layers.join(' and ')} layer${option.layers.length > 1 ? 's' : ''} only, and ${what} ${layer}`
  ).message;
  // A command line's one pool and listener are one layer: its options, said once.
  if (model.single === true) {
    const [pool] = model.pools;
    const options = { ...model.listeners[0].options, ...pool.options };
    return ignoredOptions(options, pool.layer).map(said(undefined, '', 'this is --layer', pool.layer));
  }
  return [
    ...model.pools.flatMap((pool) => ignoredOptions(pool.options, pool.layer).map(said(pool.line, ` on pool "${pool.name}"`, 'this pool is', pool.layer))),
    ...model.listeners.flatMap((listener) => ignoredOptions(listener.options, listener.layer)
      .map(said(listener.line, ` on listen ${listener.text}`, 'this listener is', listener.layer)))
  ];
}

module.exports = { ignoredOptions, layerWarnings };
