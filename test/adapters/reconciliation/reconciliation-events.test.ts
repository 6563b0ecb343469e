import type { PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { describe, expect, it } from 'vitest';
import { EventBridgeReconciliationEvents } from '../../../src/adapters/eventbridge/reconciliation-events.js';
import type { ReconciliationRun, StoredException } from '../../../src/domain/ports/reconciliation.js';
import { reconciliationCompletedDetailSchema, reconciliationExceptionDetailSchema } from '../../../src/domain/reconciliation/schemas.js';

/** `billing.reconciliation.completed` and `.exception` (DESIGN 11): what a consumer receives parses with the producer's schema. */

const run: ReconciliationRun = {
  date: '2026-12-01',
  rail: 'ach',
  status: 'completed',
  completed_at: '2026-12-02T06:00:03.000Z',
  ours: { count: 2, total_cents: 5000 },
  theirs: { count: 2, total_cents: 3700 },
  net_drift_cents: -1300,
  gross_drift_cents: 1300,
  exception_ids: ['rx_1'],
};
const exception: StoredException = {
  exception_id: 'rx_1',
  rail: 'ach',
  code: 'amount_mismatch',
  amount_cents: -1300,
  kind: 'debit',
  transaction_id: 'conf-1',
  record_key: 'sub#s-1',
  user_id: 'auth0|5f7c8ec7c33c6c004bbafe82',
  occurred_at: '2026-12-01T10:00:00.000Z',
  known: false,
  date: '2026-12-01',
  first_seen_at: '2026-12-02T06:00:03.000Z',
  last_seen_at: '2026-12-02T06:00:03.000Z',
};

function recordingBus(failed = 0) {
  const sent: PutEventsCommand[] = [];
  return { sent, client: { send: async (command: PutEventsCommand) => (sent.push(command), { FailedEntryCount: failed, Entries: [failed ? { ErrorCode: 'InternalFailure' } : { EventId: 'e-1' }] }) } as never };
}

describe('EventBridgeReconciliationEvents', () => {
  it('puts a run and an exception on the billing bus, each detail parsed by the consumers\' schema, with ids a redelivery keeps', async () => {
    const bus = recordingBus();
    const events = new EventBridgeReconciliationEvents(bus.client, 'billing-test');
    await events.completed(run);
    await events.exception(exception);
    await events.exception(exception);
    const entries = bus.sent.map((c) => c.input.Entries![0]!);
    expect(entries.map((e) => [e.Source, e.DetailType, e.EventBusName])).toEqual([
      ['billing', 'billing.reconciliation.completed', 'billing-test'],
      ['billing', 'billing.reconciliation.exception', 'billing-test'],
      ['billing', 'billing.reconciliation.exception', 'billing-test'],
    ]);
    const completed = reconciliationCompletedDetailSchema.parse(JSON.parse(entries[0]!.Detail!));
    expect(completed).toMatchObject({ date: '2026-12-01', rail: 'ach', gross_drift_cents: 1300, net_drift_cents: -1300 });
    const first = reconciliationExceptionDetailSchema.parse(JSON.parse(entries[1]!.Detail!));
    expect(first).toMatchObject({ code: 'amount_mismatch', amount_cents: -1300, user_id: exception.user_id });
    expect(JSON.parse(entries[2]!.Detail!).event_id).toBe(first.event_id);
  });

  it('refuses to publish a detail its consumers could not parse, and fails when the bus refuses the entry', async () => {
    const bus = recordingBus();
    const events = new EventBridgeReconciliationEvents(bus.client, 'billing-test');
    await expect(events.exception({ ...exception, code: 'lost' as never })).rejects.toThrow();
    await expect(events.completed({ ...run, gross_drift_cents: 1.5 })).rejects.toThrow();
    expect(bus.sent).toHaveLength(0);
    await expect(new EventBridgeReconciliationEvents(recordingBus(1).client, 'b').completed(run)).rejects.toThrow(/InternalFailure/);
  });
});
