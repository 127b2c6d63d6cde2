/**
 * The one place that knows which run state may follow which. Every state change in the database goes
 * through `allowedSources(target)` so that it is a compare-and-set on the current state.
 */
export const RUN_STATES = [
  'QUEUED',
  'PENDING',
  'CLAIMED',
  'INPROGRESS',
  'SUCCEEDED',
  'FAILED',
  'BLOCKED',
  'ERROR',
  'CANCELLED',
] as const;
export type RunState = (typeof RUN_STATES)[number];

export const TERMINAL_STATES: ReadonlySet<RunState> = new Set(['SUCCEEDED', 'FAILED', 'BLOCKED', 'ERROR', 'CANCELLED']);
export const ACTIVE_STATES: ReadonlySet<RunState> = new Set(['QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS']);

export type RunEvent =
  | 'claim' // an executor takes a queued run
  | 'start' // the agent process is running
  | 'release' // an executor gives a claimed run back (at capacity, lease lost before start)
  | 'succeed'
  | 'fail' // the agent reported failure (user error)
  | 'error' // the platform failed (lease expired, executor crashed)
  | 'block'
  | 'cancel'
  | 'continue'; // a follow-up to a finished run queues a new execution

const TRANSITIONS: Record<RunEvent, { from: readonly RunState[]; to: RunState }> = {
  claim: { from: ['QUEUED'], to: 'CLAIMED' },
  start: { from: ['CLAIMED'], to: 'INPROGRESS' },
  release: { from: ['CLAIMED', 'PENDING'], to: 'QUEUED' },
  succeed: { from: ['CLAIMED', 'INPROGRESS'], to: 'SUCCEEDED' },
  fail: { from: ['CLAIMED', 'INPROGRESS'], to: 'FAILED' },
  error: { from: ['QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS'], to: 'ERROR' },
  block: { from: ['INPROGRESS'], to: 'BLOCKED' },
  cancel: { from: ['QUEUED', 'CLAIMED', 'INPROGRESS'], to: 'CANCELLED' },
  continue: { from: ['SUCCEEDED', 'FAILED', 'BLOCKED', 'ERROR', 'CANCELLED'], to: 'QUEUED' },
};

export function transitionFor(event: RunEvent): { from: readonly RunState[]; to: RunState } {
  return TRANSITIONS[event];
}

export function nextState(from: RunState, event: RunEvent): RunState | undefined {
  const t = TRANSITIONS[event];
  return t.from.includes(from) ? t.to : undefined;
}

export function isTerminal(state: RunState): boolean {
  return TERMINAL_STATES.has(state);
}

export function isRunState(value: string): value is RunState {
  return (RUN_STATES as readonly string[]).includes(value);
}
