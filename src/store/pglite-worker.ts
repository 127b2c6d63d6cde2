/**
 * The thread that runs PGlite for src/store/pglite-thread.ts. PGlite executes SQL synchronously in
 * WebAssembly; here it does so beside the service's event loop instead of inside it. Statements keep
 * PGlite's own order: one at a time, and none outside a transaction while one is open.
 */
import fs from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import type { PGliteOptions } from '@electric-sql/pglite';
import type { Db, Queryable } from '../kernel/db.ts';
import { wrapPglite } from './pglite.ts';
import type { PgliteWorkerData, Reply, Request } from './pglite-protocol.ts';
import { decodeParams, serializeError } from './pglite-protocol.ts';

/**
 * PGlite's Emscripten file system gives its files their modes with chmod (0666 for most), which ignores the
 * umask: in this thread, chmod honours it, so a server started with umask 077 keeps its database files 0600.
 */
function chmodHonoursUmask(): void {
  const mask = process.umask();
  if (mask === 0) return;
  const masked = (mode: fs.Mode): fs.Mode => (typeof mode === 'number' ? mode & ~mask : mode);
  const { chmodSync, fchmodSync } = fs;
  fs.chmodSync = (file, mode) => chmodSync(file, masked(mode));
  fs.fchmodSync = (fd, mode) => fchmodSync(fd, masked(mode));
}

type EndRequest = Extract<Request, { op: 'end' }>;
type TxRequest = Extract<Request, { op: 'query' }> | EndRequest;

/** The statements of one open transaction, in the order they were sent. */
class TransactionInbox {
  readonly #waiting: TxRequest[] = [];
  #wake: ((request: TxRequest) => void) | undefined;

  push(request: TxRequest): void {
    if (this.#wake) {
      const wake = this.#wake;
      this.#wake = undefined;
      wake(request);
    } else {
      this.#waiting.push(request);
    }
  }

  next(): Promise<TxRequest> {
    const request = this.#waiting.shift();
    if (request) return Promise.resolve(request);
    return new Promise((resolve) => (this.#wake = resolve));
  }
}

const ROLLBACK = Symbol('rollback');

async function main(port: MessagePort, data: PgliteWorkerData): Promise<void> {
  const send = (reply: Reply): void => port.postMessage(reply);
  let db: Db;
  try {
    if (data.dataDir) chmodHonoursUmask();
    const pglite = await PGlite.create({
      ...(data.dataDir ? { dataDir: data.dataDir } : {}),
      ...(data.loadDataDir ? { loadDataDir: new Blob([data.loadDataDir as Uint8Array<ArrayBuffer>]) } : {}),
      ...(data.wasm
        ? {
            pgliteWasmModule: data.wasm.pglite as PGliteOptions['pgliteWasmModule'],
            initdbWasmModule: data.wasm.initdb as PGliteOptions['initdbWasmModule'],
          }
        : {}),
    });
    db = await wrapPglite(pglite, data.schema, true);
  } catch (err) {
    send({ kind: 'failed-to-open', error: serializeError(err) });
    return;
  }

  const transactions = new Map<number, TransactionInbox>();
  const subscriptions = new Map<number, () => Promise<void>>();
  let nextTransaction = 1;
  let nextSubscription = 1;

  const answer = (id: number, work: Promise<Omit<Extract<Reply, { kind: 'result' }>, 'kind' | 'id'>>): Promise<void> =>
    work.then(
      (result) => send({ kind: 'result', id, ...result }),
      (err: unknown) => send({ kind: 'error', id, error: serializeError(err) }),
    );

  // Statements outside a transaction run one after another, each answered before the next begins. PGlite would
  // run them in this order anyway, but one waiting in its queue could start while the answer of the one before
  // it was still a few promise steps from being sent, holding that answer back for a whole statement (the
  // delivery writer keeps a second group waiting here: docs/decisions.md, "A second group waits").
  let statements: Promise<void> = Promise.resolve();

  const runTransaction = (id: number): void => {
    const txId = nextTransaction++;
    const inbox = new TransactionInbox();
    transactions.set(txId, inbox);
    let begun = false;
    let end: EndRequest | undefined;
    const work = db.transaction(async (tx: Queryable) => {
      begun = true;
      send({ kind: 'result', id, value: txId });
      let last: Promise<unknown> = Promise.resolve();
      for (;;) {
        const request = await inbox.next();
        if (request.op === 'end') {
          // a statement still running belongs to this transaction: it ends before COMMIT or ROLLBACK
          await last;
          end = request;
          if (!request.commit) throw ROLLBACK;
          return;
        }
        const result = tx.query(request.text, request.params && decodeParams(request.params, request.bytesAt, true));
        answer(request.id, result);
        last = result.catch(() => {});
      }
    });
    work.then(
      () => send({ kind: 'result', id: end!.id }),
      (err: unknown) => {
        if (!begun) send({ kind: 'error', id, error: serializeError(err) });
        else if (end && err === ROLLBACK) send({ kind: 'result', id: end.id });
        else if (end) send({ kind: 'error', id: end.id, error: serializeError(err) });
      },
    );
    void work.catch(() => {}).finally(() => transactions.delete(txId));
  };

  const notOpen = (id: number, tx: number) =>
    send({ kind: 'error', id, error: serializeError(new Error(`transaction ${tx} is not open`)) });

  port.on('message', (request: Request) => {
    switch (request.op) {
      case 'query': {
        if (request.tx !== undefined) {
          const inbox = transactions.get(request.tx);
          if (inbox) inbox.push(request);
          else notOpen(request.id, request.tx);
          return;
        }
        statements = statements.then(() =>
          answer(
            request.id,
            db.query(request.text, request.params && decodeParams(request.params, request.bytesAt, false)),
          ),
        );
        return;
      }
      case 'end': {
        const inbox = transactions.get(request.tx);
        if (inbox) inbox.push(request);
        else notOpen(request.id, request.tx);
        return;
      }
      case 'begin':
        runTransaction(request.id);
        return;
      case 'exec':
        answer(
          request.id,
          db.exec(request.sql).then(() => ({})),
        );
        return;
      case 'listen': {
        const subscription = nextSubscription++;
        answer(
          request.id,
          db
            .listen(request.channel, (payload) => send({ kind: 'notification', subscription, payload }))
            .then((unsubscribe) => {
              subscriptions.set(subscription, unsubscribe);
              return { value: subscription };
            }),
        );
        return;
      }
      case 'unlisten': {
        const unsubscribe = subscriptions.get(request.subscription);
        subscriptions.delete(request.subscription);
        answer(
          request.id,
          (unsubscribe ? unsubscribe() : Promise.resolve()).then(() => ({})),
        );
        return;
      }
      case 'close':
        answer(
          request.id,
          db.close().then(() => {
            port.close();
            return {};
          }),
        );
        return;
    }
  });
  send({ kind: 'ready' });
}

if (parentPort) void main(parentPort, workerData as PgliteWorkerData);
