'use strict';

const assert = require('node:assert/strict');
const { cleanup, startLila, freePorts } = require('./helpers');
const { DNSMASQ, startDnsmasq } = require('./dns');
const { findTool, needTool, runTool, skipPeersOff } = require('./tools');

const DIG = findTool({ name: 'dig', env: 'LILA_DIG' });

// dig's short answer for a.test through lila: one try, answered within 2 s.
async function dig(port) {
  const { code, output } = await runTool(DIG, ['@127.0.0.1', '-p', String(port), 'a.test', 'A', '+short', '+tries=1', '+time=2']);
  assert.equal(code, 0, output);
  return output.trim();
}

describe('udp layer, DNS through lila to dnsmasq', function () {
  this.timeout(30000);
  afterEach(cleanup);

  before(function () {
    skipPeersOff(this, 'dnsmasq');
    if (DNSMASQ === null) {
      if (process.env.LILA_REQUIRE_DNSMASQ === '1') throw new Error('LILA_REQUIRE_DNSMASQ=1 but dnsmasq was not found; install it (apt-get install dnsmasq-base)');
      this.skip();
    }
    needTool(this, DIG, { name: 'dig', env: 'LILA_DIG', install: 'apt-get install bind9-dnsutils' });
  });

  it('answers dig from two dnsmasq in turn, a flow per query with --udp-responses 1', async () => {
    const one = await startDnsmasq({ hosts: '10.0.0.1 a.test\n' });
    const two = await startDnsmasq({ hosts: '10.0.0.2 a.test\n' });
    const [port] = await freePorts(1);
    await startLila(['round-robin', '--layer', 'udp', one.address, two.address, '-a', '127.0.0.1', '-p', String(port), '--udp-responses', '1']);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await dig(port));
    assert.deepEqual(answers, ['10.0.0.1', '10.0.0.2', '10.0.0.1', '10.0.0.2']);
  });

  it('takes a dnsmasq that stopped down by its dns: check, and answers from the other', async () => {
    const one = await startDnsmasq({ hosts: '10.0.0.1 a.test\n' });
    const two = await startDnsmasq({ hosts: '10.0.0.2 a.test\n' });
    const [port, admin] = await freePorts(2);
    await startLila(['round-robin', '--layer', 'udp', one.address, two.address, '-a', '127.0.0.1', '-p', String(port), '--udp-responses', '1',
      '--health-check', '--health-payload', 'dns:a.test', '--health-interval', '50ms', '--health-fall', '1', '--admin', `127.0.0.1:${admin}`]);
    await one.stop();
    // Each check's result is read where the admin API says it, until the stopped one is down.
    let backends;
    const deadline = Date.now() + 5000;
    do backends = (await (await fetch(`http://127.0.0.1:${admin}/status`)).json()).backends;
    while (backends[0].state !== 'down' && Date.now() < deadline);
    assert.equal(backends[0].state, 'down');
    assert.equal(backends[0].down_by, 'checks');
    assert.equal(backends[1].state, 'up');
    for (let i = 0; i < 3; i++) assert.equal(await dig(port), '10.0.0.2');
  });
});
