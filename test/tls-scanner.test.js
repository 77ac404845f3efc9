'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Pki } = require('./pki');
const { cleanup, onCleanup, startHttpBackend, startLila } = require('./helpers');
const { findTool, needTool, runTool } = require('./tools');

// sslyze rather than testssl.sh: a scan of one listener takes about 1.5 s (testssl.sh: about a
// minute), and it reads nothing from the network. .ci/run installs it in a virtualenv of its
// own and exports LILA_SSLYZE.
const TOOL = { name: 'sslyze', env: 'LILA_SSLYZE', install: 'pip install sslyze==6.3.1' };
const SSLYZE = findTool(TOOL);

// Mozilla's intermediate profile, TLS 1.2 part: ECDHE key exchange, AEAD suites.
const INTERMEDIATE_TLS_1_2 = /^TLS_ECDHE_(?:ECDSA|RSA)_WITH_(?:AES_(?:128|256)_GCM_SHA(?:256|384)|CHACHA20_POLY1305_SHA256)$/;
const INTERMEDIATE_GROUPS = ['X25519', 'secp256r1', 'secp384r1'];
const OLD_VERSIONS = ['ssl_2_0_cipher_suites', 'ssl_3_0_cipher_suites', 'tls_1_0_cipher_suites', 'tls_1_1_cipher_suites'];
// sslyze's Mozilla check, failing on the one thing a test certificate cannot give: a chain to a public root.
const UNTRUSTED_CERTIFICATE = 'certificate_path_validation';

describe('a TLS scanner (sslyze) against lila', function () {
  this.timeout(30000);
  let pki;

  before(function () {
    needTool(this, SSLYZE, TOOL);
    pki = new Pki();
  });
  after(() => pki && pki.remove());

  for (const [name, keyType] of [['RSA', 'rsa'], ['ECDSA', 'ec']]) {
    describe(`with an ${name} certificate`, () => {
      let scan;
      // One scan of one lila, which the checks below read.
      before(async () => {
        const certificate = pki.issue({ names: ['localhost'], ips: ['127.0.0.1'], keyType });
        const backend = await startHttpBackend('A');
        const lila = await startLila(['round-robin', backend.address, '-a', '127.0.0.1', '-p', '0',
          '--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile]);
        scan = await runSslyze(lila.port);
      });
      after(cleanup);

      it('completes every scan', () => {
        assert.equal(scan.server.connectivity_status, 'COMPLETED', scan.output);
        assert.equal(scan.server.scan_status, 'COMPLETED', scan.output);
        const failed = Object.entries(scan.result).filter(([, attempt]) => !['COMPLETED', 'NOT_SCHEDULED'].includes(attempt.status));
        assert.deepEqual(failed.map(([command, attempt]) => `${command}: ${attempt.status} ${attempt.error_reason}`), []);
      });

      it("meets Mozilla's intermediate profile, but for the trust of the test certificate", () => {
        assert.deepEqual(Object.keys(scan.compliance).filter((issue) => issue !== UNTRUSTED_CERTIFICATE), [],
          `sslyze against Mozilla's intermediate profile:\n${Object.entries(scan.compliance).map((e) => e.join(': ')).join('\n')}`);
      });

      it('offers TLS 1.2 and 1.3 only, TLS 1.2 with ECDHE and AEAD suites only', () => {
        assert.deepEqual(OLD_VERSIONS.filter((version) => scan.result[version].result.is_tls_version_supported), []);
        const tls12 = suites(scan.result.tls_1_2_cipher_suites);
        assert.ok(tls12.length > 0, 'no TLS 1.2 suite accepted');
        assert.deepEqual(tls12.filter((suite) => !INTERMEDIATE_TLS_1_2.test(suite)), [], `TLS 1.2 suites: ${tls12.join(', ')}`);
        assert.ok(suites(scan.result.tls_1_3_cipher_suites).length > 0, 'no TLS 1.3 suite accepted');
      });

      it('offers the groups X25519, P-256 and P-384 only', () => {
        const groups = scan.result.elliptic_curves.result.supported_curves.map((curve) => curve.name);
        assert.deepEqual(groups.sort(), [...INTERMEDIATE_GROUPS].sort());
      });

      it('refuses client-initiated renegotiation', () => {
        const renegotiation = scan.result.session_renegotiation.result;
        const evidence = `sslyze's renegotiation scan: ${JSON.stringify(renegotiation)}`;
        assert.equal(renegotiation.client_renegotiations_success_count, 0, evidence);
        assert.equal(renegotiation.is_vulnerable_to_client_renegotiation_dos, false, evidence);
        // RFC 5746's extension, which Mozilla's profile asks for: the renegotiation lila refuses is at least a secure one.
        assert.equal(renegotiation.supports_secure_renegotiation, true, evidence);
      });
    });
  }
});

/**
 * Scans a TLS listener on 127.0.0.1 with sslyze, checking it against Mozilla's intermediate
 * profile as well.
 *
 * @param {number} port
 * @returns {Promise<{server: object, result: object, compliance: Record<string, string>, output: string}>}
 *   server: sslyze's JSON of the server; result: its scan commands' attempts; compliance: the
 *   criteria the profile check failed, with sslyze's words
 */
async function runSslyze(port) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-sslyze-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const json = path.join(dir, 'scan.json');
  const { code, output } = await runTool(SSLYZE, ['--quiet', `--json_out=${json}`, '--mozilla_config=intermediate', `127.0.0.1:${port}`]);
  // Exit 1: not compliant (a test certificate never is); anything else, or no report, is a failed run.
  if ((code !== 0 && code !== 1) || !fs.existsSync(json)) throw new Error(`sslyze exited with ${code}; its output:\n${output}`);
  const [server] = JSON.parse(fs.readFileSync(json, 'utf8')).server_scan_results;
  // With --quiet, stdout holds the profile check alone: "* criterion: what is wrong" per issue.
  const compliance = Object.fromEntries([...output.matchAll(/^ {8}\* (\w+): (.*)$/gm)].map((match) => [match[1], match[2]]));
  if (code === 1 && Object.keys(compliance).length === 0) throw new Error(`sslyze found the server not compliant, but said not why:\n${output}`);
  return { server, result: server.scan_result, compliance, output };
}

// The names of the suites a version's scan saw accepted.
function suites(attempt) {
  return attempt.result.accepted_cipher_suites.map((accepted) => accepted.cipher_suite.name);
}
