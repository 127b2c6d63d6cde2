export type Engine = 'pglite' | 'postgres';

/** `AGENTYARD_TEST_ENGINES=pglite` (or `postgres`) narrows the matrix; both run by default. */
export function enabledEngines(): Engine[] {
  const raw = process.env.AGENTYARD_TEST_ENGINES;
  if (!raw) return ['pglite', 'postgres'];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s): s is Engine => s === 'pglite' || s === 'postgres');
}
