'use strict';

const { ok, fail, readText } = require('./admin-replies');
const { refuseWithoutToken } = require('./admin-token');

// The admin API's /config (the text that runs, and another run in its place) and, with --store,
// /cluster (the fleet's members).

const TEXT_TYPE = 'text/plain; charset=utf-8';

// /config without a config file: nothing to read or replace.
function withoutConfig(admin) {
  if (admin.config !== null) return null;
  return fail(404, 'lila runs without a config file (its servers come from the command line or a hosts file), so there is no config to read or replace');
}

// /cluster without --store: there is no fleet.
function withoutFleet(admin) {
  if (admin.fleet !== null) return null;
  return fail(404, 'lila runs without --store: it is no member of a fleet');
}

function getCluster(admin) {
  return ok(200, admin.fleet.cluster());
}

// The text may hold --admin-token itself: with a token, reading it needs the token too. With
// --store, its ETag is the stored revision that runs, for PUT's If-Match.
function getConfig(admin, { request }) {
  const refusal = refuseWithoutToken(admin, request, 'reading the config needs');
  if (refusal !== null) return refusal;
  const headers = admin.config.revision === undefined ? undefined : { etag: `"${admin.config.revision()}"` };
  return { status: 200, type: TEXT_TYPE, text: admin.config.text(), headers };
}

// A whole config text, checked whole and swapped in as SIGHUP does; a mistake changes nothing.
async function putConfig(admin, { request }) {
  if (admin.tokenDigest === null) {
    return fail(403, 'replacing the config through the admin API needs --admin-token (or LILA_ADMIN_TOKEN), even on loopback');
  }
  const body = await readText(request, 'a whole config file');
  if (body.reply !== undefined) return body.reply;
  const ifMatch = request.headers['if-match'];
  let ifRevision;
  if (ifMatch !== undefined && admin.config.revision !== undefined) {
    const match = /^"?(\d+)"?$/.exec(ifMatch.trim());
    if (match === null) return fail(400, `If-Match must be a revision as GET /config's ETag gives it ("12"), received ${JSON.stringify(ifMatch)}`);
    ifRevision = Number(match[1]);
  }
  const result = await admin.config.reload(body.value, { ifRevision });
  // A write over a revision another editor replaced: 412 when the client named its revision.
  if (!result.ok) return fail(result.conflict === undefined ? 400 : ifRevision === undefined ? 409 : 412, result.message);
  return ok(200, { reloaded: result.line });
}

module.exports = { withoutConfig, withoutFleet, getCluster, getConfig, putConfig };
