'use strict';

// The most edits a suggestion may be away from what was typed, and never more than a third of
// its length: `prot` may be `port`, `a` is never `b`.
const MAX_EDITS = 2;

/**
 * The number of edits between two words: a letter inserted, deleted, replaced, or two
 * neighbours swapped (Damerau-Levenshtein, optimal string alignment).
 *
 * @param {string} a
 * @param {string} b
 * @returns {number}
 */
function editDistance(a, b) {
  // Three rows of the table: the one before the last, the last, the one being made.
  let before = null;
  let last = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(last[j] + 1, row[j - 1] + 1, last[j - 1] + cost);
      if (before !== null && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    before = last;
    last = row;
  }
  return last[b.length];
}

/**
 * What a mistyped word was probably meant to be: the candidate fewest edits away (the first
 * of those), when it is close enough, case aside; undefined when none is, or the word is one.
 *
 * @param {string} word
 * @param {Iterable<string>} candidates
 * @returns {string | undefined}
 */
function closest(word, candidates) {
  const limit = Math.min(MAX_EDITS, Math.floor(word.length / 3));
  let best;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    if (candidate === word) return undefined;
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * The end of a message for a mistyped word: `; did you mean round-robin?`, or '' when no
 * candidate is close.
 *
 * @param {string} word
 * @param {Iterable<string>} candidates
 * @param {string} [prefix] written before the suggestion, as the word was (`--`)
 * @returns {string}
 */
function didYouMean(word, candidates, prefix = '') {
  const suggestion = closest(word, candidates);
  return suggestion === undefined ? '' : `; did you mean ${prefix}${suggestion}?`;
}

module.exports = { editDistance, closest, didYouMean };
