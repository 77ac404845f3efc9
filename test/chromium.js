'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { skipPeersOff } = require('./tools');

// Debian's chromium, which .ci/run installs; playwright-core drives it and downloads nothing.
const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
];

/**
 * In a mocha `before`: skips the suite when chromium is not installed, or
 * fails it when LILA_REQUIRE_CHROMIUM=1 (as .ci/run sets).
 *
 * @param {Mocha.Context} context
 */
function needChromium(context) {
  skipPeersOff(context, 'chromium');
  if (fs.existsSync(CHROMIUM)) return;
  if (process.env.LILA_REQUIRE_CHROMIUM === '1') {
    throw new Error(`LILA_REQUIRE_CHROMIUM=1 but ${CHROMIUM} was not found; install it (apt-get install chromium)`);
  }
  context.skip();
}

/**
 * Starts headless chromium with a fresh profile directory.
 *
 * @returns {Promise<{context: import('playwright-core').BrowserContext, close: () => Promise<void>}>}
 */
async function launchChromium() {
  const { chromium } = require('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lila-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 }
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    }
  };
}

/**
 * Opens a page that records what should never happen on the dashboard:
 * console errors and warnings, uncaught exceptions, dialogs (an `alert`
 * from injected markup), and requests to anything but its own origin.
 *
 * @param {import('playwright-core').BrowserContext} context
 * @returns {Promise<{page: import('playwright-core').Page, problems: string[], requests: import('playwright-core').Request[]}>}
 */
async function openPage(context) {
  const page = await context.newPage();
  const problems = [];
  const requests = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    dialog.dismiss().catch(() => {});
  });
  page.on('request', (request) => requests.push(request));
  return { page, problems, requests };
}

module.exports = { needChromium, launchChromium, openPage };
