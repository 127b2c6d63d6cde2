import { describe, expect, it } from 'vitest';
import { checkCron } from '../../src/definitions/cron.ts';

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
