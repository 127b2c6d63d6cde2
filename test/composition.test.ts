import { describe, expect, it } from 'vitest';
import { operatorServerRoles, startInOrder } from '../src/composition.ts';
import type { Component } from '../src/composition.ts';
import { ALL_ROLES } from '../src/config.ts';
import { createLogger } from '../src/log.ts';

const log = createLogger('silent');

/** Components that write what they do into `events`; `fail` names one that throws on start or on stop. */
function components(names: string[], events: string[], fail: { start?: string; stop?: string } = {}): Component[] {
  return names.map((name) => ({
    name,
    roles: 'every',
    async start() {
      if (fail.start === name) throw new Error(`${name} cannot start`);
      events.push(`start ${name}`);
      return async () => {
        events.push(`stop ${name}`);
        if (fail.stop === name) throw new Error(`${name} cannot stop`);
      };
    },
  }));
}

describe('startInOrder', () => {
  it('starts a list in order and stops it in the reverse order, once', async () => {
    const events: string[] = [];
    const stop = await startInOrder(components(['a', 'b', 'c'], events), log);
    expect(events).toEqual(['start a', 'start b', 'start c']);
    await stop();
    await stop();
    expect(events.slice(3)).toEqual(['stop c', 'stop b', 'stop a']);
  });

  it('stops what already started when a component fails to start, and throws its error', async () => {
    const events: string[] = [];
    await expect(startInOrder(components(['a', 'b', 'c'], events, { start: 'c' }), log)).rejects.toThrow(
      'c cannot start',
    );
    expect(events).toEqual(['start a', 'start b', 'stop b', 'stop a']);
  });

  it('keeps stopping the others when one fails to stop', async () => {
    const events: string[] = [];
    const stop = await startInOrder(components(['a', 'b', 'c'], events, { stop: 'b' }), log);
    await stop();
    expect(events.slice(3)).toEqual(['stop c', 'stop b', 'stop a']);
  });
});

describe('operatorServerRoles', () => {
  it('leaves the reconcile loops and the executor to the lease holder', () => {
    expect([...operatorServerRoles(new Set(ALL_ROLES))].sort()).toEqual(['api', 'ingress', 'scheduler']);
    expect([...operatorServerRoles(new Set(['controller', 'api'] as const))]).toEqual(['api']);
  });
});
