/**
 * The import rules of `.dependency-cruiser.cjs` hold over src/, and the code is formatted and linted as
 * `biome.json` says: what CI checks with `npm test`.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { cruise } from 'dependency-cruiser';
import type { ICruiseResult, IConfiguration } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);

describe('architecture', () => {
  it('keeps every import rule of .dependency-cruiser.cjs (no violation over src/)', async () => {
    const config = require(path.join(root, '.dependency-cruiser.cjs')) as IConfiguration;
    const ruleNames = (config.forbidden ?? []).map((rule) => rule.name);
    expect(ruleNames).toEqual(
      expect.arrayContaining([
        'kernel-imports-no-domain',
        'domains-never-import-http',
        'definitions-pure',
        'store-knows-no-domain',
        'ingress-not-runs-or-factories',
        'fastify-only-in-http-and-route-plugins',
        'no-cycles-between-folders',
      ]),
    );
    const reported = await cruise(['src'], {
      ...config.options,
      baseDir: root,
      ruleSet: { forbidden: config.forbidden ?? [] },
    });
    const result = reported.output as ICruiseResult;
    expect(result.summary.totalCruised).toBeGreaterThan(100);
    const violations = result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    expect(violations).toEqual([]);
  }, 120_000);

  it('passes `biome ci` (formatter and linter) over the repository', async () => {
    const biome = path.join(root, 'node_modules', '.bin', 'biome');
    const run = await promisify(execFile)(biome, ['ci', '--colors=off', '.'], { cwd: root, maxBuffer: 16 << 20 }).then(
      (out) => ({ code: 0, output: out.stdout + out.stderr }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({
        code: err.code ?? 1,
        output: `${err.stdout ?? ''}${err.stderr ?? ''}`,
      }),
    );
    expect(run.code, run.output.slice(-4000)).toBe(0);
  }, 120_000);
});
