/** What `serve` and `operator` do when their database engine stops under them (Db.onLost). */

/** Exit code of a command whose database engine stopped under it: a supervisor restarts the process. */
export const EXIT_DATABASE_LOST = 1;
/** How long a command waits for in-flight requests and module loops before it exits without its database. */
export const SHUTDOWN_AFTER_DATABASE_LOST_MS = 5_000;

/** Stops the server, or gives up waiting after `ms` (its loops may hang on a database that is gone). */
export async function stopWithin(server: { stop(): Promise<void> }, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([server.stop().catch(() => {}), deadline]);
  clearTimeout(timer);
}
