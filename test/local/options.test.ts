import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PLAN_MARGIN_SECONDS } from '../../src/domain/billing-day.js';
import { LocalUsageError, MIN_PACED_INTERVAL_SECONDS, parseCliFlags, resolveOptions } from '../../src/local/options.js';
import { DEFAULT_BALANCE_THRESHOLD_CENTS } from '../../src/runtime/config.js';

describe('local runtime options', () => {
  it('shares the balance threshold default with production', () => {
    expect(resolveOptions({}).balanceThresholdCents).toBe(DEFAULT_BALANCE_THRESHOLD_CENTS);
    expect(resolveOptions({ BALANCE_THRESHOLD_CENTS: '0' }).balanceThresholdCents).toBe(0);
  });

  it.each(['50 00', '50.5', '1e3', '0x10', '', '-5'])('refuses BALANCE_THRESHOLD_CENTS=%j', (value) => {
    expect(() => resolveOptions({ BALANCE_THRESHOLD_CENTS: value })).toThrow(LocalUsageError);
    expect(() => resolveOptions({ BALANCE_THRESHOLD_CENTS: value })).toThrow(/BALANCE_THRESHOLD_CENTS: must be a whole number of cents/);
  });

  it('npm start refuses a bad threshold at startup with one clear line', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/local/start.ts'], {
      env: { ...process.env, BALANCE_THRESHOLD_CENTS: '50 00' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual([
      'npm start: invalid configuration: BALANCE_THRESHOLD_CENTS: must be a whole number of cents, digits only (e.g. 5000)',
    ]);
  }, 60_000);

  it('binds loopback only: HOST=0.0.0.0 is refused', () => {
    expect(resolveOptions({ HOST: '::1' }).host).toBe('::1');
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'example.com']) {
      expect(() => resolveOptions({ HOST: host })).toThrow(/HOST: must be a loopback address/);
    }
  });

  it('with budgets set, bounds the paced interval as the stack bounds it at synth: whole seconds, twice the margin to 900 s', () => {
    const budgets = { STRIPE_BUDGET_PER_SECOND: '5', PAYMENTS_BUDGET_PER_SECOND: '5' };
    const shortest = MIN_PACED_INTERVAL_SECONDS * 1000;
    expect(MIN_PACED_INTERVAL_SECONDS).toBe(2 * PLAN_MARGIN_SECONDS);
    expect(resolveOptions({ ...budgets, COLLECTIONS_INTERVAL_MS: String(shortest) }).collectionsIntervalMs).toBe(shortest);
    expect(resolveOptions({ ...budgets, COLLECTIONS_INTERVAL_MS: '20000' }).collectionsIntervalMs).toBe(20_000);
    expect(resolveOptions({ ...budgets, COLLECTIONS_INTERVAL_MS: '0' }).collectionsIntervalMs).toBe(0);
    expect(resolveOptions({ ...budgets, COLLECTIONS_INTERVAL_MS: '900000' }).collectionsIntervalMs).toBe(900_000);
    expect(() => resolveOptions({ ...budgets, COLLECTIONS_INTERVAL_MS: String(shortest - 1000) })).toThrow(new RegExp(`COLLECTIONS_INTERVAL_MS: with budgets set, at least ${shortest}`));
    expect(() => resolveOptions({ ...budgets, COLLECTIONS_INTERVAL_MS: '20500' })).toThrow(/whole seconds/);
    expect(() => resolveOptions({ ...budgets, COLLECTIONS_INTERVAL_MS: '901000' })).toThrow(/at most 900 s/);
    // Without budgets the unpaced planner has no window: any interval, as before.
    expect(resolveOptions({ COLLECTIONS_INTERVAL_MS: '500' }).collectionsIntervalMs).toBe(500);
  });

  it('parses the flags', () => {
    expect(parseCliFlags(['--port', '0', '--fresh', '--no-seed', '--now=2027-01-01T00:00:00Z'])).toEqual({ port: 0, fresh: true, seed: false, now: '2027-01-01T00:00:00Z' });
    expect(parseCliFlags(['--no-schedule'])).toEqual({ schedule: false });
    expect(() => parseCliFlags(['--bogus'])).toThrow(/unknown option --bogus/);
  });
});
