/**
 * What the console's browser tests share: Debian's chromium driven by playwright-core (nothing
 * downloads a browser), the console built when a fresh checkout has none, and a page at the size
 * the docs' screenshots are taken at.
 */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

const ROOT = join(import.meta.dirname, '..', '..');

/** $CHROMIUM_PATH, else `chromium` or `chromium-browser` on the PATH. */
export function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH)
    return existsSync(process.env.CHROMIUM_PATH) ? process.env.CHROMIUM_PATH : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      if (dir && existsSync(join(dir, name))) return join(dir, name);
    }
  }
  return undefined;
}

/** findChromium, saying on stderr that `suite` is skipped when there is none. */
export function chromiumOrSkip(suite: string): string | undefined {
  const executablePath = findChromium();
  if (executablePath === undefined) {
    console.warn(
      `\n*** ${suite} SKIPPED: no chromium found (apt-get install chromium, or set CHROMIUM_PATH) ***\n`,
    );
  }
  return executablePath;
}

/** Builds the console (vite) when console/dist has no index.html yet. */
export async function buildConsoleIfMissing(): Promise<void> {
  if (existsSync(join(ROOT, 'console', 'dist', 'index.html'))) return;
  const { build } = await import('vite');
  await build({ configFile: join(ROOT, 'console', 'vite.config.ts'), logLevel: 'warn' });
}

/** Chromium at `executablePath` (no sandbox: tests may run as root). */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, args: ['--no-sandbox'] });
}

/** Chromium and a page of 1500 × 1000, the screenshots' size. */
export async function openPage(executablePath: string): Promise<{ browser: Browser; page: Page }> {
  const browser = await launchChromium(executablePath);
  return { browser, page: await browser.newPage({ viewport: { width: 1500, height: 1000 } }) };
}

/**
 * Where a suite's screenshots go, made: docs/console/ (the README's) with
 * STEPTHREAD_UPDATE_SCREENSHOTS=1, else a temporary directory named for `suite`.
 */
export function screenshotsDir(suite: string): string {
  const dir =
    process.env.STEPTHREAD_UPDATE_SCREENSHOTS === '1'
      ? join(ROOT, 'docs', 'console')
      : mkdtempSync(join(tmpdir(), `stepthread-${suite}-shots-`));
  mkdirSync(dir, { recursive: true });
  return dir;
}
