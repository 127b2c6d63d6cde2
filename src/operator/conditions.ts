export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** A status condition in the Kubernetes convention (metav1.Condition). */
export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** The Kubernetes limit on a condition message; longer messages are cut with a marker. */
export const MAX_MESSAGE_LENGTH = 32_768;
const TRIMMED = '… (trimmed)';

function trimMessage(message: string): string {
  return message.length <= MAX_MESSAGE_LENGTH
    ? message
    : message.slice(0, MAX_MESSAGE_LENGTH - TRIMMED.length) + TRIMMED;
}

/** Conditions that exist only while True (kstatus: abnormal-true). */
const ONLY_WHEN_TRUE: ReadonlySet<string> = new Set(['Reconciling', 'Stalled']);
/** Conditions that exclude each other: setting one True removes the other. */
const EXCLUSIVE: Readonly<Record<string, string>> = { Reconciling: 'Stalled', Stalled: 'Reconciling' };
/** The order conditions are written in (the rest follow by type). */
const ORDER = ['Ready', 'Reconciling', 'Stalled'];

/**
 * The one setter of a resource's conditions during a reconcile. It starts from the stored conditions; each
 * `set` replaces a condition of a type, keeping its lastTransitionTime when status, reason and message are
 * unchanged; `toArray` is written once, when the reconcile ends.
 */
export class ConditionSet {
  readonly #byType = new Map<string, Condition>();
  readonly #generation: number;
  readonly #now: () => Date;

  constructor(existing: readonly Condition[] | undefined, generation: number, now: () => Date = () => new Date()) {
    for (const c of existing ?? []) this.#byType.set(c.type, { ...c });
    this.#generation = generation;
    this.#now = now;
  }

  get(type: string): Condition | undefined {
    return this.#byType.get(type);
  }

  isTrue(type: string): boolean {
    return this.#byType.get(type)?.status === 'True';
  }

  set(type: string, status: ConditionStatus, reason: string, message: string): void {
    if (!/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/.test(reason))
      throw new Error(`condition reason "${reason}" is not PascalCase`);
    if (ONLY_WHEN_TRUE.has(type) && status !== 'True') {
      this.#byType.delete(type);
      return;
    }
    if (status === 'True' && EXCLUSIVE[type]) this.#byType.delete(EXCLUSIVE[type]);
    const text = trimMessage(message);
    const previous = this.#byType.get(type);
    const unchanged = previous && previous.status === status && previous.reason === reason && previous.message === text;
    this.#byType.set(type, {
      type,
      status,
      reason,
      message: text,
      lastTransitionTime: unchanged
        ? previous.lastTransitionTime
        : this.#now()
            .toISOString()
            .replace(/\.\d{3}Z$/, 'Z'),
      observedGeneration: this.#generation,
    });
  }

  delete(type: string): void {
    this.#byType.delete(type);
  }

  toArray(): Condition[] {
    const rank = (t: string): number => {
      const i = ORDER.indexOf(t);
      return i === -1 ? ORDER.length : i;
    };
    return [...this.#byType.values()].sort(
      (a, b) => rank(a.type) - rank(b.type) || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0),
    );
  }
}
