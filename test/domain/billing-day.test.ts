import { describe, expect, it } from 'vitest';
import { backlogEtaMinutes, delaySecondsOf, intervalProblem, MIN_QUOTA_FACTOR, nextQuotaFactor, quotaOf } from '../../src/domain/billing-day.js';
import { capOf, processorOfRail, scheduledRate } from '../../src/domain/processor-budget.js';
import { PROCESSORS, SERVICES, type ServiceEntry } from '../../src/manifest/index.js';

describe('billing-day arithmetic (DESIGN 13)', () => {
  it('quota: (1 - share) x budget x (interval - margin), lowered by the factor, minus what is queued, never negative', () => {
    expect(quotaOf({ rate: 18, intervalSeconds: 900, marginSeconds: 5, factor: 1, inQueue: 0 })).toBe(16_110);
    expect(quotaOf({ rate: 18, intervalSeconds: 900, marginSeconds: 5, factor: 0.5, inQueue: 110 })).toBe(7_945);
    expect(quotaOf({ rate: 18, intervalSeconds: 60, marginSeconds: 5, factor: 1, inQueue: 5_000 })).toBe(0);
  });

  it('the factor falls by the throttled share of a run (at most halved) and climbs back by a tenth, within [min, 1]', () => {
    expect(nextQuotaFactor(1, 4, 8)).toBe(0.5);
    expect(nextQuotaFactor(1, 400, 1_000)).toBe(0.6);
    // Six messages left by one throttle in a run of 990: the next run plans 0.6 % less, not half.
    expect(nextQuotaFactor(1, 6, 990)).toBe(0.994);
    expect(nextQuotaFactor(0.5, 0, 990)).toBe(0.6);
    expect(nextQuotaFactor(1, 0, 990)).toBe(1);
    expect(nextQuotaFactor(MIN_QUOTA_FACTOR, 9, 10)).toBe(MIN_QUOTA_FACTOR);
  });

  it('message i is due at the run start + i / rate: its delay counts from the start, whole seconds, 0 to 900', () => {
    expect([0, 1, 17, 18, 19, 36].map((i) => delaySecondsOf(i, 18, 0))).toEqual([0, 0, 0, 1, 1, 2]);
    // Sent 1.5 s into the run: slot 2 s is half a second away, rounded up; slots passed are due now.
    expect(delaySecondsOf(36, 18, 1500)).toBe(1);
    expect(delaySecondsOf(0, 18, 1500)).toBe(0);
    expect(delaySecondsOf(1_000_000, 18, 0)).toBe(900);
  });

  it('the interval is bounded to [timeout + margin, 900 s]', () => {
    expect(intervalProblem(900, 300)).toBeUndefined();
    expect(intervalProblem(302, 300)).toBeUndefined();
    expect(intervalProblem(301, 300)).toMatch(/timeout plus/);
    expect(intervalProblem(300, 300)).toMatch(/timeout plus/);
    expect(intervalProblem(3600, 300)).toMatch(/at most 900/);
  });

  it('the scheduled cap leaves the person share; a person may use the whole budget', () => {
    const settings = { perSecond: { stripe: 20, payments: 25 }, personShare: 0.1 };
    expect(scheduledRate(settings, 'stripe')).toBe(18);
    expect(capOf(settings, 'payments', 'scheduled')).toBe(22);
    expect(capOf(settings, 'payments', 'person')).toBe(25);
    expect(backlogEtaMinutes(2_000_000, 18)).toBe(1852);
  });

  it('the processor of each rail is the manifest service that charges on it', () => {
    for (const id of PROCESSORS) for (const rail of (SERVICES[id] as ServiceEntry).rails ?? []) expect(processorOfRail(rail)).toBe(id);
  });
});
