/**
 * How a thread reaches the spawner process (spawner-process.ts): the main thread forks it, once, and relays the
 * orders of other threads (the git thread) to it over a BroadcastChannel, so that no thread forks the server a
 * second time: a fork from any thread pauses the event loop (docs/decisions.md, "Agents and git are started by
 * a spawner process"). A child's streams still connect to the listener of the thread that ordered it.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { BroadcastChannel, isMainThread } from 'node:worker_threads';
import type { SpawnOrder, SpawnReply } from './spawn-protocol.ts';

/** Where one order's replies go, and what its loss is told to. */
export interface SpawnRoute {
  reply(reply: SpawnReply): void;
  lost(cause: Error): void;
}

/** What a thread's spawner sends its orders through. */
export interface SpawnerLink {
  send(order: SpawnOrder, route: SpawnRoute): void;
}

/** Between a thread and the main thread's relay. */
type RelayMessage =
  | { kind: 'order'; order: SpawnOrder }
  | { kind: 'taken'; id: string }
  | { kind: 'reply'; reply: SpawnReply }
  | { kind: 'lost'; id: string; message: string };

const RELAY_CHANNEL = 'agentyard:spawner';

/** An order the main thread has not taken by then fails: no relay serves this process's threads. */
const RELAY_TAKE_TIMEOUT_MS = 5_000;

/** The orders a link has sent and not heard the end of (an exit or a failure): the link keeps the process alive while any remain. */
class OrdersInFlight {
  readonly #routes = new Map<string, SpawnRoute>();
  readonly #keepAlive: (keep: boolean) => void;

  constructor(keepAlive: (keep: boolean) => void) {
    this.#keepAlive = keepAlive;
  }

  add(id: string, route: SpawnRoute): void {
    if (this.#routes.size === 0) this.#keepAlive(true);
    this.#routes.set(id, route);
  }

  /** Passes a reply on to its order's route; an exit or a failure ends the order. */
  reply(reply: SpawnReply): void {
    const route = reply.kind === 'spawned' ? this.#routes.get(reply.id) : this.remove(reply.id);
    route?.reply(reply);
  }

  /** Ends an order, answering its route. */
  remove(id: string): SpawnRoute | undefined {
    const route = this.#routes.get(id);
    if (!route) return undefined;
    this.#routes.delete(id);
    if (this.#routes.size === 0) this.#keepAlive(false);
    return route;
  }

  /** Ends every order, answering their routes. */
  removeAll(): SpawnRoute[] {
    return [...this.#routes.keys()].map((id) => this.remove(id)!);
  }
}

/** The forked spawner process of the main thread: every order of every thread goes through it. */
class SpawnerProcess implements SpawnerLink {
  readonly #child: ChildProcess;
  // it keeps this process alive while a child it started runs, as a child process of child_process does
  readonly #orders = new OrdersInFlight((keep) => this.#keepAlive(keep));
  #lost: Error | undefined;

  constructor(onLost: () => void) {
    this.#child = fork(new URL('./spawner-process.ts', import.meta.url), [], {
      // none of this process's flags (a test runner's loaders, the service's heap settings), nor its environment
      execArgv: [],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
    });
    this.#child.on('message', (reply: SpawnReply) => this.#orders.reply(reply));
    const lose = (cause: Error): void => {
      if (this.#lost) return;
      this.#lost = cause;
      onLost();
      for (const route of this.#orders.removeAll()) route.lost(cause);
    };
    this.#child.on('error', lose);
    this.#child.on('exit', (code, signal) =>
      lose(new Error(`the agent spawner has stopped (${signal ?? `exit ${code}`})`)),
    );
    this.#keepAlive(false);
  }

  send(order: SpawnOrder, route: SpawnRoute): void {
    if (this.#lost) {
      route.lost(this.#lost);
      return;
    }
    this.#orders.add(order.id, route);
    this.#child.send(order);
  }

  #keepAlive(keep: boolean): void {
    if (keep) {
      this.#child.ref();
      this.#child.channel?.ref();
    } else {
      this.#child.unref();
      this.#child.channel?.unref();
    }
  }
}

let spawnerProcess: SpawnerProcess | undefined;

/** The main thread's spawner process, forked on first use and again after it was lost. */
function mainSpawner(): SpawnerProcess {
  spawnerProcess ??= new SpawnerProcess(() => {
    spawnerProcess = undefined;
  });
  return spawnerProcess;
}

/**
 * Forks the spawner process now, in the main thread: a server does so before it serves, so that the one fork of
 * its life (tens of ms of a paused event loop at its size) delays no request.
 */
export function startSpawner(): void {
  if (isMainThread) mainSpawner();
}

/** Another thread's link: the main thread's spawner, through its relay (serveSpawnerToThreads). */
class RelayedSpawner implements SpawnerLink {
  readonly #channel = new BroadcastChannel(RELAY_CHANNEL);
  readonly #orders = new OrdersInFlight((keep) => (keep ? this.#channel.ref() : this.#channel.unref()));
  /** Orders the main thread has not taken yet, each failed at its timer. */
  readonly #untaken = new Map<string, NodeJS.Timeout>();

  constructor() {
    this.#channel.unref();
    this.#channel.onmessage = (event) => this.#receive((event as { data: RelayMessage }).data);
  }

  send(order: SpawnOrder, route: SpawnRoute): void {
    this.#orders.add(order.id, route);
    const timer = setTimeout(
      () => this.#lose(order.id, 'no spawner serves this thread (serveSpawnerToThreads in the main thread)'),
      RELAY_TAKE_TIMEOUT_MS,
    );
    this.#untaken.set(order.id, timer);
    this.#channel.postMessage({ kind: 'order', order } satisfies RelayMessage);
  }

  #receive(message: RelayMessage): void {
    if (message.kind === 'order') return;
    const id = message.kind === 'reply' ? message.reply.id : message.id;
    this.#taken(id);
    if (message.kind === 'lost') this.#lose(id, message.message);
    else if (message.kind === 'reply') this.#orders.reply(message.reply);
  }

  #taken(id: string): void {
    clearTimeout(this.#untaken.get(id));
    this.#untaken.delete(id);
  }

  #lose(id: string, message: string): void {
    this.#taken(id);
    this.#orders.remove(id)?.lost(new Error(message));
  }
}

let relayed: RelayedSpawner | undefined;

/** This thread's link to the spawner process: its own fork in the main thread, the main thread's elsewhere. */
export function spawnerLink(): SpawnerLink {
  if (isMainThread) return { send: (order, route) => mainSpawner().send(order, route) };
  relayed ??= new RelayedSpawner();
  return relayed;
}

let relay: BroadcastChannel | undefined;

/**
 * In the main thread: takes the orders of this process's other threads to its spawner process, so that they
 * fork nothing. Call before a thread's first order (src/sources/git-thread.ts does as it makes the git thread).
 */
export function serveSpawnerToThreads(): void {
  if (!isMainThread || relay) return;
  const channel = new BroadcastChannel(RELAY_CHANNEL);
  relay = channel;
  channel.unref();
  channel.onmessage = (event) => {
    const message = (event as { data: RelayMessage }).data;
    if (message.kind !== 'order') return;
    const { order } = message;
    channel.postMessage({ kind: 'taken', id: order.id } satisfies RelayMessage);
    mainSpawner().send(order, {
      reply: (reply) => channel.postMessage({ kind: 'reply', reply } satisfies RelayMessage),
      lost: (cause) =>
        channel.postMessage({ kind: 'lost', id: order.id, message: cause.message } satisfies RelayMessage),
    });
  };
}
