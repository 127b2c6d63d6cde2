import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

const SCREENSHOTS = path.resolve(import.meta.dirname, '../../docs/screenshots');
const AXE = readFileSync(path.resolve(import.meta.dirname, '../../node_modules/axe-core/axe.min.js'), 'utf8');

/** Screenshots are written only when asked: `AGENTYARD_SCREENSHOTS=1 npx vitest run test/console/`. */
export const WRITE_SCREENSHOTS = process.env.AGENTYARD_SCREENSHOTS === '1';

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe-core in the page (evaluated over the DevTools protocol, which the page's CSP does not govern). */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${page.url()}: ${v.id} (${v.impact}) ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

/** The page at 1280 and 390 px wide, as docs/screenshots/<name>-<width>.png, when screenshots are asked for. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!WRITE_SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${width}.png`), fullPage: false });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** How much wider than the window the page is (0 when nothing scrolls sideways). */
export async function overflowX(page: Page): Promise<number> {
  return page.evaluate(() => {
    const g = globalThis as unknown as {
      document: { documentElement: { scrollWidth: number } };
      innerWidth: number;
    };
    return g.document.documentElement.scrollWidth - g.innerWidth;
  });
}

/** Signs `page` in to the console at `url` with an API key, and waits for the factories page it lands on. */
export async function signInWithKey(page: Page, url: string, key: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Factories' }).waitFor();
}
