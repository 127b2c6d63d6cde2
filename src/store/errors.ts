/** PostgreSQL's SQLSTATE for a unique index that refused a row; `constraint` narrows it to one index. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** Runs `fn` again (a few times) when PostgreSQL chose it as a deadlock victim or failed it on serialization. */
export async function retryOnConflict<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= attempts || (code !== '40P01' && code !== '40001')) throw err;
    }
  }
}
