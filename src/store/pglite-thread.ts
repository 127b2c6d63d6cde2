/**
 * PGlite in a thread of its own (src/store/pglite-worker.ts): the same Db as src/store/pglite.ts, but the
 * WebAssembly PostgreSQL no longer runs on the event loop that serves HTTP, so a busy database and a busy
 * server use two cores instead of taking turns on one (docs/performance.md, docs/decisions.md).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db, QueryResult, Queryable, SqlValue } from '../kernel/db.ts';
import type { CompiledPglite, PgliteWorkerData, Reply, Request } from './pglite-protocol.ts';
import { deserializeError, encodeParams } from './pglite-protocol.ts';

type ResultReply = Extract<Reply, { kind: 'result' }>;
type RequestBody = Request extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

interface Pending {
  resolve: (reply: ResultReply) => void;
  reject: (err: Error) => void;
}

/** The threads this process has open (for terminatePgliteThreadsForTesting). */
const openThreads = new Set<Worker>();

/**
 * Test seam, not for use outside tests: ends every PGlite thread of this process as a crash would (not
 * through close()), so that a test can show what the Db and `agentyard serve` do when the thread dies.
 */
export async function terminatePgliteThreadsForTesting(): Promise<void> {
  await Promise.all([...openThreads].map((worker) => worker.terminate()));
}

/**
 * A small young generation for the thread's JavaScript heap. V8 starts incremental marking, which ends in a
 * full mark-compact, whenever the old generation's headroom is smaller than the young generation; this heap
 * is small (PGlite's JavaScript, its buffers, the results in flight), so with the default young
 * generation (16 MB semi-spaces) nearly every few megabytes allocated ended in a mark-compact instead of a
 * scavenge (docs/decisions.md, "PGlite's thread has an 8 MB young generation").
 */
const WORKER_HEAP_LIMITS = { maxYoungGenerationSizeMb: 8 };

let compiled: Promise<CompiledPglite> | undefined;
const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<object> } }).WebAssembly;

/**
 * PGlite's WebAssembly, compiled once per process and handed to every thread it opens: a thread that compiled
 * its own copy paid about 0.6 s of CPU for it (lazy compilation and tier-up start again in every isolate), which
 * a process that opens many databases (the test suite) paid every time.
 */
function compiledPglite(): Promise<CompiledPglite> {
  compiled ??= (async () => {
    const require = createRequire(import.meta.url);
    const compile = async (name: string): Promise<object> =>
      wasm.compile(await readFile(require.resolve(`@electric-sql/pglite/${name}`)));
    const [pglite, initdb] = await Promise.all([compile('pglite.wasm'), compile('initdb.wasm')]);
    return { pglite, initdb };
  })();
  compiled.catch(() => {
    compiled = undefined;
  });
  return compiled;
}

export async function openPgliteThread(options: Omit<PgliteWorkerData, 'wasm'>): Promise<Db> {
  const worker = new Worker(new URL('./pglite-worker.ts', import.meta.url), {
    workerData: { ...options, wasm: await compiledPglite() } satisfies PgliteWorkerData,
    resourceLimits: WORKER_HEAP_LIMITS,
  });
  const pending = new Map<number, Pending>();
  const listeners = new Map<number, (payload: string) => void>();
  let nextId = 1;
  let gone: Error | undefined;
  let closing = false;
  let lost: Error | undefined;
  const lostListeners = new Set<(cause: Error) => void>();

  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number): void =>
      reject(new Error(`the PGlite thread exited (${code}) while opening the database`));
    worker.once('error', reject);
    worker.once('exit', onExit);
    worker.once('message', (reply: Reply) => {
      worker.off('error', reject);
      worker.off('exit', onExit);
      if (reply.kind === 'ready') resolve();
      else if (reply.kind === 'failed-to-open') reject(deserializeError(reply.error));
      else reject(new Error(`unexpected first message from the PGlite thread: ${reply.kind}`));
    });
  });

  const failAll = (err: Error): void => {
    gone ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  // an uncaught error in the thread comes as 'error' then 'exit': the first names the cause
  const stopped = (cause: Error): void => {
    failAll(cause);
    if (closing || lost) return;
    lost = cause;
    for (const listener of lostListeners) listener(cause);
    lostListeners.clear();
  };
  openThreads.add(worker);
  worker.on('error', (err) => stopped(err));
  worker.on('exit', (code) => {
    openThreads.delete(worker);
    stopped(new Error(`the PGlite thread has stopped (exit ${code})`));
  });
  worker.on('message', (reply: Reply) => {
    if (reply.kind === 'notification') {
      listeners.get(reply.subscription)?.(reply.payload);
      return;
    }
    if (reply.kind !== 'result' && reply.kind !== 'error') return;
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    pending.delete(reply.id);
    // the thread keeps the process alive only while a caller waits for it, as a socket with a request does
    if (pending.size === 0) worker.unref();
    if (reply.kind === 'result') waiting.resolve(reply);
    else waiting.reject(deserializeError(reply.error));
  });
  worker.unref();

  const call = (body: RequestBody): Promise<ResultReply> => {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    return new Promise<ResultReply>((resolve, reject) => {
      if (pending.size === 0) worker.ref();
      pending.set(id, { resolve, reject });
      worker.postMessage({ ...body, id } as Request);
    });
  };

  const query = async <Row>(
    text: string,
    params: readonly SqlValue[] | undefined,
    tx?: number,
  ): Promise<QueryResult<Row>> => {
    const reply = await call({
      op: 'query',
      text,
      ...(params ? encodeParams(params) : {}),
      ...(tx !== undefined ? { tx } : {}),
    });
    return { rows: (reply.rows ?? []) as Row[], rowCount: reply.rowCount ?? 0 };
  };

  return {
    engine: 'pglite',
    query: (text, params) => query(text, params),
    async transaction(fn) {
      const tx = (await call({ op: 'begin' })).value!;
      const scoped: Queryable = { query: (text, params) => query(text, params, tx) };
      let result;
      try {
        result = await fn(scoped);
      } catch (err) {
        await call({ op: 'end', tx, commit: false }).catch(() => {});
        throw err;
      }
      await call({ op: 'end', tx, commit: true });
      return result;
    },
    async exec(sql) {
      await call({ op: 'exec', sql });
    },
    async listen(channel, onPayload) {
      const subscription = (await call({ op: 'listen', channel })).value!;
      listeners.set(subscription, onPayload);
      return async () => {
        listeners.delete(subscription);
        await call({ op: 'unlisten', subscription }).catch(() => {});
      };
    },
    async notify(channel, payload) {
      await query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      if (gone) return;
      closing = true;
      await call({ op: 'close' }).catch(() => {});
      gone = new Error('the database is closed');
      await worker.terminate();
    },
    onLost(listener) {
      if (lost) {
        const cause = lost;
        queueMicrotask(() => listener(cause));
        return () => {};
      }
      lostListeners.add(listener);
      return () => {
        lostListeners.delete(listener);
      };
    },
  };
}
