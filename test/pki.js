'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { X509Certificate } = require('node:crypto');

/**
 * A test certificate authority made with openssl in a directory of its own:
 * `issue()` signs certificates for the names a test needs.
 */
class Pki {
  /**
   * @param {{name?: string}} [options] the CA's common name, `lila test CA` by default
   */
  constructor(options = {}) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-pki-'));
    this.caKey = path.join(this.dir, 'ca.key');
    this.caFile = path.join(this.dir, 'ca.pem');
    this.serial = 0x1000;
    this.count = 0;
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
      '-keyout', this.caKey, '-out', this.caFile, '-days', '2', '-subj', `/CN=${options.name || 'lila test CA'}`);
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

  /**
   * Signs a client certificate (extended key usage clientAuth) with `openssl ca`, whose database
   * `revoke()` and `crl()` use.
   *
   * @param {{subject?: string, uris?: string[], dns?: string[], expired?: boolean}} [options] `subject` as openssl
   *   takes it (`/O=Example/CN=ops`, in that order in the certificate); `expired`: valid for a day in 2020
   * @returns {{certFile: string, keyFile: string, cert: string, key: string, serial: string}}
   */
  issueClient(options = {}) {
    const config = this.caConfig();
    const base = path.join(this.dir, `client-${++this.count}`);
    const keyFile = `${base}.key`;
    openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile);
    openssl('req', '-new', '-key', keyFile, '-subj', options.subject || '/CN=client', '-utf8', '-out', `${base}.csr`);
    const alt = [...(options.uris || []).map((uri) => `URI:${uri}`), ...(options.dns || []).map((name) => `DNS:${name}`)];
    const extensions = ['basicConstraints=CA:FALSE', 'extendedKeyUsage=clientAuth'];
    if (alt.length > 0) extensions.push(`subjectAltName=${alt.join(',')}`);
    fs.writeFileSync(`${base}.ext`, `${extensions.join('\n')}\n`);
    const dates = options.expired === true ? ['-startdate', '20200101000000Z', '-enddate', '20200102000000Z'] : ['-days', '2'];
    openssl('ca', '-batch', '-config', config, '-notext', '-utf8', '-in', `${base}.csr`, '-out', `${base}.crt`, '-extfile', `${base}.ext`, ...dates);
    const cert = fs.readFileSync(`${base}.crt`, 'latin1');
    return { certFile: `${base}.crt`, keyFile, cert, key: fs.readFileSync(keyFile, 'latin1'), serial: new X509Certificate(cert).serialNumber };
  }

  /**
   * Marks a certificate of this CA revoked: the next `crl()` lists it.
   *
   * @param {{certFile: string}} issued
   */
  revoke(issued) {
    openssl('ca', '-config', this.caConfig(), '-revoke', issued.certFile);
  }

  /**
   * Writes this CA's CRL, listing what `revoke()` revoked so far.
   *
   * @param {string} [file] where; a new file in the directory by default
   * @returns {string} the file
   */
  crl(file = path.join(this.dir, `crl-${++this.count}.pem`)) {
    openssl('ca', '-config', this.caConfig(), '-gencrl', '-out', file);
    return file;
  }

  // The configuration of `openssl ca`: its database, a serial of its own, any subject kept as given.
  caConfig() {
    const config = path.join(this.dir, 'ca.cnf');
    if (fs.existsSync(config)) return config;
    fs.mkdirSync(path.join(this.dir, 'issued'));
    fs.writeFileSync(path.join(this.dir, 'index.txt'), '');
    fs.writeFileSync(path.join(this.dir, 'ca.serial'), '2000\n');
    fs.writeFileSync(path.join(this.dir, 'crlnumber'), '1000\n');
    fs.writeFileSync(config, [
      '[ca]', 'default_ca = lila',
      '[lila]', `dir = ${this.dir}`, 'database = $dir/index.txt', 'new_certs_dir = $dir/issued', 'serial = $dir/ca.serial',
      'crlnumber = $dir/crlnumber', 'certificate = $dir/ca.pem', 'private_key = $dir/ca.key', 'default_md = sha256',
      'default_crl_days = 2', 'policy = any', 'preserve = yes', 'unique_subject = no', 'email_in_dn = no',
      '[any]', ...['countryName', 'stateOrProvinceName', 'localityName', 'organizationName', 'organizationalUnitName', 'commonName']
        .map((field) => `${field} = optional`), ''
    ].join('\n'));
    return config;
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
