'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const { once } = require('node:events');
const { HTTP_ENGINES } = require('../lib/config/defaults');
const { cleanup, onCleanup, startHttpBackend, startTcpBackend, startProxy, request } = require('./helpers');

// A request every backend answers, sent by each client of the load in turn.
const LOAD_CLIENTS = 20;

describe('requests in flight on a backend that dies', function () {
  this.timeout(20000);
  afterEach(cleanup);

  for (const engine of HTTP_ENGINES) {
    describe(`${engine} engine`, () => {
      // A: takes the request, then drops the connection without a byte of response. B: answers.
      async function startDyingAndGood() {
        const dying = { requests: [] };
        const a = await startTcpBackend('A', (socket) => {
          socket.once('data', (data) => {
            dying.requests.push(data.toString('latin1').split('\r\n')[0]);
            socket.destroy();
          });
        });
        const b = await startHttpBackend('B', (req, res) => {
          req.resume();
          res.end(`B ${req.method}`);
        });
        // A first: round-robin starts with the first server.
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address, b.address], failTimeout: 60000 });
        return { proxy, dying };
      }

      it('sends an idempotent request without a body to another backend when its backend fails before answering', async () => {
        const { proxy, dying } = await startDyingAndGood();

        const response = await request(proxy.port, { agent: false, path: '/x' });

        assert.equal(response.status, 200);
        assert.equal(response.body, 'B GET');
        assert.deepEqual(dying.requests, ['GET /x HTTP/1.1']);
        // A failed it: passive health has taken it down.
        assert.equal(proxy.backends[0].state, 'down');
      });

      it('never sends a POST twice: 502', async () => {
        const { proxy, dying } = await startDyingAndGood();

        const response = await request(proxy.port, { agent: false, method: 'POST', path: '/x' });

        assert.equal(response.status, 502);
        assert.deepEqual(dying.requests, ['POST /x HTTP/1.1']);
      });

      it('does not retry once a byte of the response came: the client sees the failure', async () => {
        const a = await startTcpBackend('A', (socket) => {
          socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf'));
        });
        const seen = [];
        const b = await startHttpBackend('B', (req, res) => {
          seen.push(req.url);
          res.end('B');
        });
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: [a.address, b.address] });

        const outcome = await new Promise((resolve) => {
          const req = http.get({ host: '127.0.0.1', port: proxy.port, path: '/x', agent: false }, (res) => {
            res.resume();
            res.on('error', () => resolve('cut'));
            res.on('end', () => resolve('whole'));
          });
          req.on('error', () => resolve('cut'));
        });

        assert.equal(outcome, 'cut');
        assert.deepEqual(seen, []);
      });

      it(`fails no GET while every backend is restarted in turn under load (${LOAD_CLIENTS} clients)`, async () => {
        const backends = [];
        for (const name of ['A', 'B', 'C']) {
          // Every request on a connection of its own (not one lila reuses), answered a little later:
          // many are in flight, each on a fresh connection, when a backend dies.
          backends.push(await startHttpBackend(name, (req, res) => {
            req.resume();
            res.setHeader('Connection', 'close');
            setTimeout(() => res.end(name), 10);
          }));
        }
        const proxy = await startProxy({ engine, mode: 'round-robin', servers: backends.map((b) => b.address), failTimeout: 200 });

        let running = true;
        const outcomes = { ok: 0, failed: [] };
        const client = async () => {
          const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
          onCleanup(() => agent.destroy());
          while (running) {
            try {
              const response = await request(proxy.port, { agent, path: '/' });
              if (response.status === 200) outcomes.ok++;
              else outcomes.failed.push(`${response.status} ${response.body}`);
            } catch (err) {
              outcomes.failed.push(err.message);
            }
          }
        };
        const load = Promise.all(Array.from({ length: LOAD_CLIENTS }, client));
        for (const backend of backends) {
          // Requests in flight on it are cut: the backend process died.
          backend.closeAllConnections();
          backend.close();
          await once(backend, 'close');
          await new Promise((resolve) => setTimeout(resolve, 100));
          backend.listen(backend.port, '127.0.0.1');
          await once(backend, 'listening');
        }
        running = false;
        await load;

        assert.deepEqual(outcomes.failed, []);
        assert.ok(outcomes.ok > 100, `${outcomes.ok} requests served`);
      });
    });
  }
});
