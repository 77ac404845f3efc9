'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

/**
 * A test certificate authority made with openssl in a directory of its own:
 * `issue()` signs certificates for the names a test needs.
 */
class Pki {
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-pki-'));
    this.caKey = path.join(this.dir, 'ca.key');
    this.caFile = path.join(this.dir, 'ca.pem');
    this.serial = 0x1000;
    this.count = 0;
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
      '-keyout', this.caKey, '-out', this.caFile, '-days', '2', '-subj', '/CN=lila test CA');
    this.ca = fs.readFileSync(this.caFile, 'latin1');
  }

  /**
   * Signs a certificate.
   *
   * @param {{names?: string[], ips?: string[], keyType?: 'rsa' | 'ec', days?: number}} [options]
   *   `days: 0` gives a certificate that has expired a second later
   * @returns {{certFile: string, keyFile: string, combinedFile: string, cert: string, key: string, serial: string}}
   *   `serial` in upper-case hex, as Node reports it
   */
  issue(options = {}) {
    const names = options.names || ['localhost'];
    const base = path.join(this.dir, `leaf-${++this.count}`);
    const keyFile = `${base}.key`;
    if (options.keyType === 'rsa') openssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', keyFile);
    else openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile);
    openssl('req', '-new', '-key', keyFile, '-subj', `/CN=${names[0] || 'lila test'}`, '-out', `${base}.csr`);
    const alt = [...names.map((name) => `DNS:${name}`), ...(options.ips || []).map((ip) => `IP:${ip}`)];
    fs.writeFileSync(`${base}.ext`, alt.length > 0 ? `subjectAltName=${alt.join(',')}\n` : '\n');
    const serial = (++this.serial).toString(16).toUpperCase();
    openssl('x509', '-req', '-in', `${base}.csr`, '-CA', this.caFile, '-CAkey', this.caKey, '-set_serial', `0x${serial}`,
      '-days', String(options.days === undefined ? 2 : options.days), '-out', `${base}.crt`, '-extfile', `${base}.ext`);
    const cert = fs.readFileSync(`${base}.crt`, 'latin1');
    const key = fs.readFileSync(keyFile, 'latin1');
    const combinedFile = `${base}.pem`;
    fs.writeFileSync(combinedFile, cert + key);
    return { certFile: `${base}.crt`, keyFile, combinedFile, cert, key, serial: serial.padStart(4, '0') };
  }

  /** Removes the directory and everything in it. */
  remove() {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

module.exports = { Pki };

function openssl(...args) {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
