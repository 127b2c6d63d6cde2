/** What `serve` and `operator` do when their database engine stops under them (Db.onLost). */
import type { Logger } from '../kernel/log.ts';

/** Exit code of a command whose database engine stopped under it: a supervisor restarts the process. */
const EXIT_DATABASE_LOST = 1;
/** How long a command waits for in-flight requests and module loops before it exits without its database. */
const SHUTDOWN_AFTER_DATABASE_LOST_MS = 5_000;

/**
 * Logs why, stops what stops within a few seconds, and exits 1: every query fails from now on, so a
 * supervisor must restart the process. Exits even if stopping hangs, and even if a module's loop or timer
 * would keep a useless process alive.
 */
export async function exitOnDatabaseLost(server: { stop(): Promise<void> }, log: Logger, cause: Error): Promise<never> {
  log.fatal({ err: cause }, `the database engine has stopped (${cause.message}); exiting`);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, SHUTDOWN_AFTER_DATABASE_LOST_MS);
    timer.unref();
  });
  await Promise.race([server.stop().catch(() => {}), deadline]);
  clearTimeout(timer);
  process.exit(EXIT_DATABASE_LOST);
}
