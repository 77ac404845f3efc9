'use strict';

const { readClientHello } = require('../net/client-hello');

/**
 * Reads the TLS server name a client asks for from its ClientHello, without
 * terminating TLS (HAProxy's `req.ssl_sni`, nginx's `ssl_preread`), and puts
 * the bytes back so that the backend gets the handshake whole. A client that
 * does not speak TLS, or says nothing within `wait` ms (a protocol where the
 * server speaks first), has no name: it matches only a route without one.
 *
 * @param {import('node:net').Socket} client paused
 * @param {number} wait ms
 * @param {(name: string | undefined) => void} done once, with the client paused again
 */
function readServerName(client, wait, done) {
  let read = null;
  const finish = (name) => {
    clearTimeout(timer);
    client.removeListener('data', onData);
    client.removeListener('end', onEnd);
    client.removeListener('error', onError);
    client.pause();
    if (read !== null) client.unshift(read);
    done(name);
  };
  const onData = (chunk) => {
    read = read === null ? chunk : Buffer.concat([read, chunk]);
    const hello = readClientHello(read);
    if (hello.state === 'more') return;
    finish(hello.state === 'done' && hello.serverName !== null ? hello.serverName : undefined);
  };
  // Gone before a whole ClientHello (ended, reset): nothing to route.
  const onEnd = () => {
    clearTimeout(timer);
    client.removeListener('data', onData);
    client.destroy();
  };
  const onError = onEnd;
  const timer = setTimeout(finish, wait, undefined);
  client.on('data', onData);
  client.once('end', onEnd);
  client.once('error', onError);
  client.resume();
}

module.exports = { readServerName };
