'use strict';

/**
 * What a check of who the client is (`--jwt-*`, `--oidc-*`) gives the
 * backend: fields made of who it is, and never a client's own fields of
 * those names. A request let in gets `view.identity` (`{names, fields}`),
 * which `--forward-auth` reads too, and `view.user` for the access line.
 */
class IdentityFields {
  /**
   * @param {string[]} names the fields the check sets, any case: a client's own copies always go
   */
  constructor(names) {
    /** The lower-case names of the fields it sets. */
    this.names = new Set(names.map((name) => name.toLowerCase()));
  }

  /**
   * The client's own fields of those names, removed: the first step of what the backend gets.
   *
   * @param {string[]} headers `[name, value, ...]`
   * @returns {string[]}
   */
  withoutClientCopies(headers) {
    if (this.names.size === 0) return headers;
    const out = [];
    for (let i = 0; i < headers.length; i += 2) if (!this.names.has(headers[i].toLowerCase())) out.push(headers[i], headers[i + 1]);
    return out;
  }

  /**
   * The identity's fields, added last. The node engine and upgrades make the
   * backend's fields before the check has ended (keys may be read
   * meanwhile): the list they get then is the one the fields are added to
   * when the request is let in.
   *
   * @param {string[]} headers
   * @param {import('./request-view')} view
   * @returns {string[]}
   */
  withClaims(headers, view) {
    if (this.names.size === 0) return headers;
    if (view.identity === undefined) {
      view.identityHeaders = headers;
      return headers;
    }
    return view.identity.fields.length === 0 ? headers : [...headers, ...view.identity.fields];
  }

  /**
   * The request is let in, with these fields and this user.
   *
   * @param {import('./request-view')} view
   * @param {string[]} fields `[name, value, ...]`
   * @param {string | null} user for the access line
   */
  admit(view, fields, user) {
    if (user !== null) view.user = user;
    view.identity = { names: this.names, fields };
    if (view.identityHeaders !== undefined && fields.length > 0) view.identityHeaders.push(...fields);
  }
}

module.exports = IdentityFields;
