import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { ReconciliationEvents, ReconciliationRun, StoredException } from '../../domain/ports/reconciliation.js';
import { RECONCILIATION_EVENT_TYPES, reconciliationCompletedDetailSchema, reconciliationExceptionDetailSchema } from '../../domain/reconciliation/schemas.js';
import { parseCold } from '../../domain/lazy-schema.js';

/**
 * `billing.reconciliation.completed` and `billing.reconciliation.exception` (DESIGN 11, 14) on the
 * billing bus. No sequence: a run is ordered by its date and `completed_at`, an exception by its id
 * and `first_seen_at`. A failed entry fails the call, so the run is retried by its next invocation.
 * Each detail is parsed with the schema its consumers parse it with (src/domain/reconciliation/schemas.ts).
 */
export class EventBridgeReconciliationEvents implements ReconciliationEvents {
  constructor(
    private readonly client: Pick<EventBridgeClient, 'send'>,
    private readonly busName: string,
  ) {}

  async completed(run: ReconciliationRun): Promise<void> {
    return this.put(RECONCILIATION_EVENT_TYPES.completed, parseCold(reconciliationCompletedDetailSchema, { event_id: `recon:${run.date}:${run.rail}:${run.completed_at ?? ''}`, ...run }));
  }

  async exception(exception: StoredException): Promise<void> {
    return this.put(RECONCILIATION_EVENT_TYPES.exception, parseCold(reconciliationExceptionDetailSchema, { event_id: `recon:${exception.exception_id}`, ...exception }));
  }

  private async put(detailType: string, detail: Record<string, unknown>): Promise<void> {
    const out = await this.client.send(new PutEventsCommand({ Entries: [{ EventBusName: this.busName, Source: 'billing', DetailType: detailType, Detail: JSON.stringify(detail) }] }));
    if ((out.FailedEntryCount ?? 0) > 0) throw new Error(`PutEvents refused ${detailType}: ${out.Entries?.[0]?.ErrorCode ?? 'unknown'}`);
  }
}
