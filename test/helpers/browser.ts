// A headless Chromium for the browser tests: Debian's `chromium` (installed by .ci/run), driven by
// playwright-core, which never downloads a browser. Where none is found the tests skip and say why,
// except when FACE_CHECK_REQUIRE_BROWSER=1 (CI), where a missing browser is a failure.
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium'];

/** The Chromium executable: FACE_CHECK_CHROMIUM, else the first Debian path that exists. */
export function chromiumPath(): string | undefined {
  const chosen = process.env.FACE_CHECK_CHROMIUM;
  if (chosen) return fs.existsSync(chosen) ? chosen : undefined;
  return CANDIDATES.find((p) => fs.existsSync(p));
}

/** Why the browser tests cannot run here, or undefined when they can. Throws where a browser is required. */
export function browserSkipReason(): string | undefined {
  if (chromiumPath()) return undefined;
  const reason = `no Chromium found (looked at ${CANDIDATES.join(', ')}; set FACE_CHECK_CHROMIUM or apt-get install chromium)`;
  if (process.env.FACE_CHECK_REQUIRE_BROWSER === '1') throw new Error(`browser tests required: ${reason}`);
  return reason;
}

export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error('no Chromium (check browserSkipReason() first)');
  // --no-sandbox: the tests run as root in CI, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
