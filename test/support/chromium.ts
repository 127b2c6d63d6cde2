import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';

/** Debian's Chromium (`.ci/run` installs it); `AGENTYARD_CHROMIUM` names another. No browser is downloaded. */
export const CHROMIUM = process.env.AGENTYARD_CHROMIUM ?? '/usr/bin/chromium';

/** Headless, with the background services off: this machine's closed network refuses their connections. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
