'use strict';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAYS = 'Mon|Tue|Wed|Thu|Fri|Sat|Sun';
const LONG_DAYS = 'Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday';
const MONTH = MONTHS.join('|');
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// RFC 9110 §5.6.7's three forms, case-sensitive as its grammar is; nothing before or after.
const IMF_FIXDATE = new RegExp(`^(?:${DAYS}), (\\d{2}) (${MONTH}) (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:${LONG_DAYS}), (\\d{2})-(${MONTH})-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:${DAYS}) (${MONTH}) ([ \\d]\\d) ${TIME} (\\d{4})$`);
// Dates formatted, by second: a site's files share few modification times (a deploy writes
// them within seconds), and Date's toUTCString costs a file's answer about a microsecond.
const FORMATTED = new Map();
const FORMATTED_LIMIT = 1024;

/**
 * An HTTP-date's time (RFC 9110 §5.6.7): IMF-fixdate
 * (`Sun, 06 Nov 1994 08:49:37 GMT`), and the obsolete RFC 850
 * (`Sunday, 06-Nov-94 08:49:37 GMT`, its two-digit year the latest one not
 * more than 50 years ahead) and asctime (`Sun Nov  6 08:49:37 1994`) forms,
 * which a recipient must accept. Anything else, a list of dates, or a day
 * no calendar has (`31 Feb`) is NaN: a field to ignore.
 *
 * @param {string | undefined} text
 * @param {number} [now] ms since the epoch, for RFC 850's century
 * @returns {number} ms since the epoch (whole seconds), or NaN
 */
function parseHttpDate(text, now = Date.now()) {
  if (typeof text !== 'string') return NaN;
  let match = IMF_FIXDATE.exec(text);
  if (match !== null) return utc(match[3], match[2], match[1], match[4], match[5], match[6]);
  match = ASCTIME_DATE.exec(text);
  if (match !== null) return utc(match[6], match[1], match[2].trim(), match[3], match[4], match[5]);
  match = RFC850_DATE.exec(text);
  if (match === null) return NaN;
  const thisYear = new Date(now).getUTCFullYear();
  let year = thisYear - (thisYear % 100) + Number(match[3]);
  if (year > thisYear + 50) year -= 100;
  return utc(year, match[2], match[1], match[4], match[5], match[6]);
}

/**
 * A time as an IMF-fixdate, the form lila sends (whole seconds).
 *
 * @param {number} ms since the epoch
 * @returns {string}
 */
function formatHttpDate(ms) {
  const second = Math.floor(ms / 1000);
  let text = FORMATTED.get(second);
  if (text === undefined) {
    text = new Date(second * 1000).toUTCString();
    if (FORMATTED.size >= FORMATTED_LIMIT) FORMATTED.clear();
    FORMATTED.set(second, text);
  }
  return text;
}

module.exports = { parseHttpDate, formatHttpDate };

function utc(year, monthName, day, hours, minutes, seconds) {
  const month = MONTHS.indexOf(monthName);
  const d = Number(day);
  const h = Number(hours);
  const m = Number(minutes);
  // second = 2DIGIT up to 60: a leap second, taken as the next second (as Date does).
  const s = Number(seconds);
  if (h > 23 || m > 59 || s > 60) return NaN;
  // setUTCFullYear, not Date.UTC: that reads years 0 to 99 as 1900 to 1999.
  const date = new Date(0);
  date.setUTCFullYear(Number(year), month, d);
  if (date.getUTCDate() !== d) return NaN;
  return date.getTime() + ((h * 60 + m) * 60 + s) * 1000;
}
