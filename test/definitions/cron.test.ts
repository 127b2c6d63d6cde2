import { describe, expect, it } from 'vitest';
import { checkCron, goDurationMs, isGoDuration, parseSchedule } from '../../src/definitions/cron.ts';

describe('checkCron (robfig standard grammar, UTC)', () => {
  it.each([
    '0 3 * * *',
    '*/15 * * * *',
    '0 9-17/2 * * MON-FRI',
    '0 0 1 JAN,jul ?',
    '5,10 0 ? * sun',
    '@hourly',
    '@daily',
    '@midnight',
    '@weekly',
    '@monthly',
    '@yearly',
    '@annually',
    '@every 90s',
    '@every 1h30m',
    '@every 1.5h',
    '@every 500ms',
  ])('accepts %s', (expr) => {
    expect(checkCron(expr)).toBeUndefined();
  });

  it.each([
    ['0 0 3 * * *', '5 fields'],
    ['0 3 * *', '5 fields'],
    ['TZ=UTC 0 3 * * *', 'UTC'],
    ['CRON_TZ=Europe/Paris 0 3 * * *', 'UTC'],
    ['60 * * * *', 'outside'],
    ['0 24 * * *', 'outside'],
    ['0 0 0 * *', 'outside'],
    ['0 0 * 13 *', 'outside'],
    ['0 0 * * 7', 'outside'],
    ['0 0 L * *', 'not a valid'],
    ['0 0 * * 5#3', 'not a valid'],
    ['*/0 * * * *', 'step 0'],
    ['@every 1d', 'duration'],
    ['@every 0s', 'positive'],
    ['@reboot', 'descriptor'],
  ])('refuses %s', (expr, why) => {
    expect(checkCron(expr)).toContain(why);
  });
});

describe('parseSchedule (the one parser the validator and the scheduler share)', () => {
  it('expands descriptors and normalises fields to what croner runs', () => {
    expect(parseSchedule('@weekly')).toEqual({ spec: { kind: 'cron', fields: '0 0 * * 0' } });
    expect(parseSchedule('  0  9 * *   mon-fri ')).toEqual({ spec: { kind: 'cron', fields: '0 9 * * mon-fri' } });
  });

  it('turns @every into whole seconds, at least one, as robfig does', () => {
    expect(parseSchedule('@every 1h30m')).toEqual({ spec: { kind: 'every', intervalMs: 5_400_000 } });
    expect(parseSchedule('@every 1500ms')).toEqual({ spec: { kind: 'every', intervalMs: 1000 } });
    expect(parseSchedule('@every 10ms')).toEqual({ spec: { kind: 'every', intervalMs: 1000 } });
  });

  it('reads Go durations', () => {
    expect(isGoDuration('1h30m')).toBe(true);
    expect(isGoDuration('1d')).toBe(false);
    expect(isGoDuration('-5s')).toBe(false);
    expect(goDurationMs('1.5h')).toBe(5_400_000);
    expect(goDurationMs('250us')).toBe(0.25);
  });

  it('says why an expression is refused, as checkCron does', () => {
    expect(parseSchedule('0 24 * * *')).toEqual({ problem: checkCron('0 24 * * *') });
    expect(parseSchedule('@every 0s')).toEqual({ problem: '@every needs a positive duration' });
  });
});
