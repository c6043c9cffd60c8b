/**
 * A real Chromium for page tests: Debian's package (/usr/bin/chromium, or
 * WEIR_CHROMIUM), driven by playwright-core; never a browser download.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.WEIR_CHROMIUM ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium package (.ci/run does) or set WEIR_CHROMIUM`);
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
}

/** Console errors and uncaught exceptions of a page, as they happen. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`exception: ${e.message}`));
  return errors;
}

/** Where tests leave screenshots (under the ignored .weir/). */
export function testOutput(name: string): string {
  const dir = new URL('../../.weir/test-output/', import.meta.url).pathname;
  mkdirSync(dir, { recursive: true });
  return `${dir}${name}`;
}
