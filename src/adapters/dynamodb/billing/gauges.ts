import type { AchRateCounts } from '../../../domain/ach-return-rates.js';
import type { DunningState } from '../../../domain/dunning.js';
import type { BillingGauges } from '../../../domain/ports/gauges.js';
import { readCounters } from '../ach-rate-counters.js';
import { readGaugeCounters } from '../gauge-counters.js';
import { COUNTER_KEYS, type BillingTables } from './tables.js';

/** The counters the billing writes keep in their transactions (gauge-counters.ts, ach-rate-counters.ts): one Query each. */
export class DynamoBillingGauges implements BillingGauges {
  constructor(private readonly t: BillingTables) {}

  async countFailing(): Promise<{ retrying: number; parked: number }> {
    const counts = await readGaugeCounters(this.t.client, this.t.table, COUNTER_KEYS, 'billing.countFailing');
    return { retrying: counts.failing_retrying, parked: counts.failing_parked };
  }

  async countDunning(): Promise<Record<DunningState, number>> {
    const counts = await readGaugeCounters(this.t.client, this.t.table, COUNTER_KEYS, 'billing.countDunning');
    return { retrying: counts.dunning_retrying, exhausted: counts.dunning_exhausted };
  }

  async achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts> {
    return readCounters(this.t.client, this.t.table, COUNTER_KEYS, fromDay, toDay, 'billing.achRateCounts');
  }
}
