import type { ServiceContext } from '../context.ts';

/** A readiness check: undefined when ready, else why not (shown in the /readyz answer). */
export type ReadinessCheck = () => Promise<string | undefined> | string | undefined;

const checks = new WeakMap<ServiceContext, Map<string, ReadinessCheck>>();

/** Adds a check that /readyz runs (the operator adds "informers synced"); returns its removal. */
export function addReadinessCheck(ctx: ServiceContext, name: string, check: ReadinessCheck): () => void {
  let map = checks.get(ctx);
  if (!map) {
    map = new Map();
    checks.set(ctx, map);
  }
  map.set(name, check);
  return () => {
    if (map.get(name) === check) map.delete(name);
  };
}

const DATABASE_TIMEOUT_MS = 2_000;

async function databaseCheck(ctx: ServiceContext): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ctx.db.query('SELECT 1'),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${DATABASE_TIMEOUT_MS} ms`)), DATABASE_TIMEOUT_MS);
      }),
    ]);
    return undefined;
  } catch (err) {
    return `database unreachable: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every readiness check; `ready` only when all pass. */
export async function readiness(ctx: ServiceContext): Promise<{ ready: boolean; checks: Record<string, string> }> {
  const results: Record<string, string> = {};
  const entries: [string, ReadinessCheck][] = [
    ['database', () => databaseCheck(ctx)],
    ...(checks.get(ctx) ?? new Map()),
  ];
  await Promise.all(
    entries.map(async ([name, check]) => {
      try {
        results[name] = (await check()) ?? 'ok';
      } catch (err) {
        results[name] = err instanceof Error ? err.message : String(err);
      }
    }),
  );
  return { ready: Object.values(results).every((r) => r === 'ok'), checks: results };
}
