import { describe, expect, it } from 'vitest';
import { goDurationMs } from '../../src/definitions/cron.ts';
import { InvalidCronError, parseCron } from '../../src/schedules/cron.ts';
import { inlineSchedulesOf } from '../../src/schedules/automation-sync.ts';

const at = (iso: string) => new Date(iso);
const next = (expr: string, after: string) => parseCron(expr).nextAfter(at(after)).toISOString();

describe('schedule fire times', () => {
  it('computes 5-field cron in UTC, strictly after the given time', () => {
    expect(next('0 9 * * *', '2030-01-01T08:59:59.999Z')).toBe('2030-01-01T09:00:00.000Z');
    expect(next('0 9 * * *', '2030-01-01T09:00:00.000Z')).toBe('2030-01-02T09:00:00.000Z');
    expect(next('*/15 * * * *', '2030-01-01T00:07:00Z')).toBe('2030-01-01T00:15:00.000Z');
    expect(next('30 2 * * mon-fri', '2030-01-05T00:00:00Z')).toBe('2030-01-07T02:30:00.000Z'); // Sat → Mon
    expect(next('0 0 1 jan *', '2030-06-01T00:00:00Z')).toBe('2031-01-01T00:00:00.000Z');
  });

  it('treats restricted day-of-month and day-of-week as either-or, like robfig/cron', () => {
    // 2030-01-01 is a Tuesday: the 13th or any Friday, whichever comes first.
    expect(next('0 0 13 * 5', '2030-01-01T00:00:00Z')).toBe('2030-01-04T00:00:00.000Z');
  });

  it('maps every descriptor', () => {
    const after = '2030-03-15T10:20:30Z';
    expect(next('@yearly', after)).toBe('2031-01-01T00:00:00.000Z');
    expect(next('@annually', after)).toBe('2031-01-01T00:00:00.000Z');
    expect(next('@monthly', after)).toBe('2030-04-01T00:00:00.000Z');
    expect(next('@weekly', after)).toBe('2030-03-17T00:00:00.000Z'); // Sunday
    expect(next('@daily', after)).toBe('2030-03-16T00:00:00.000Z');
    expect(next('@midnight', after)).toBe('2030-03-16T00:00:00.000Z');
    expect(next('@hourly', after)).toBe('2030-03-15T11:00:00.000Z');
  });

  it('runs @every on a fixed cadence of whole seconds (at least one)', () => {
    expect(goDurationMs('1h30m')).toBe(5_400_000);
    expect(goDurationMs('1.5s')).toBe(1500);
    expect(next('@every 90s', '2030-01-01T00:00:00.400Z')).toBe('2030-01-01T00:01:30.000Z');
    expect(next('@every 1500ms', '2030-01-01T00:00:00Z')).toBe('2030-01-01T00:00:01.000Z');
    expect(next('@every 10ms', '2030-01-01T00:00:00Z')).toBe('2030-01-01T00:00:01.000Z');
  });

  it('after a fire, continues with the first slot after now: missed slots are skipped', () => {
    const cron = parseCron('0 * * * *');
    // Fired on time.
    expect(cron.nextAfterFire(at('2030-01-01T05:00:00Z'), at('2030-01-01T05:00:00.020Z')).toISOString()).toBe(
      '2030-01-01T06:00:00.000Z',
    );
    // The 05:00 slot fired at 08:17 after downtime: 06:00, 07:00, 08:00 are not replayed.
    expect(cron.nextAfterFire(at('2030-01-01T05:00:00Z'), at('2030-01-01T08:17:00Z')).toISOString()).toBe(
      '2030-01-01T09:00:00.000Z',
    );
    const every = parseCron('@every 10m');
    expect(every.nextAfterFire(at('2030-01-01T00:00:00Z'), at('2030-01-01T00:00:01Z')).toISOString()).toBe(
      '2030-01-01T00:10:00.000Z',
    );
    // Cadence kept: the next slot on the 10-minute grid after now.
    expect(every.nextAfterFire(at('2030-01-01T00:00:00Z'), at('2030-01-01T00:35:00Z')).toISOString()).toBe(
      '2030-01-01T00:40:00.000Z',
    );
    expect(every.nextAfterFire(at('2030-01-01T00:00:00Z'), at('2030-01-01T00:40:00Z')).toISOString()).toBe(
      '2030-01-01T00:50:00.000Z',
    );
  });

  it('refuses what robfig/cron refuses, saying why', () => {
    for (const [expr, why] of [
      ['0 9 * *', /5 fields/],
      ['0 0 9 * * *', /5 fields/],
      ['TZ=Europe/Paris 0 9 * * *', /UTC/],
      ['CRON_TZ=UTC 0 9 * * *', /UTC/],
      ['61 * * * *', /minute/],
      ['0 9 * * 8', /day-of-week/],
      ['@fortnightly', /descriptor/],
      ['@every soon', /duration/],
      ['0 9 L * *', /day-of-month/],
    ] as const) {
      expect(() => parseCron(expr), expr).toThrow(InvalidCronError);
      expect(() => parseCron(expr), expr).toThrow(why);
    }
  });
});

describe('automation rows', () => {
  it('reads inline schedules from the file form and the validator form', () => {
    expect(
      inlineSchedulesOf([
        { provider: 'schedule', event: 'cron_fired', schedule: { name: 'nightly', cron: ' 0 2 * * * ' } },
        { provider: 'schedule', event: 'cron_fired', schedule: { cron: '@hourly' } },
        { provider: 'schedule', event: 'cron_fired', filter: { schedule_ids: ['sch_1'] } },
        {
          kind: 'schedule',
          provider: 'schedule',
          event: 'cron_fired',
          schedule: { name: null, cron: '@daily' },
          scheduleIds: [],
        },
        { provider: 'webhook', event: 'received', filter: { webhook_ids: ['wh_1'] } },
        'garbage',
      ]),
    ).toEqual([
      { name: 'nightly', cron: '0 2 * * *' },
      { name: null, cron: '@hourly' },
      { name: null, cron: '@daily' },
    ]);
    expect(inlineSchedulesOf({})).toEqual([]);
  });
});
