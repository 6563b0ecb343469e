import { safeParseCold } from '../../domain/lazy-schema.js';
import { ProcessorError, ProcessorOutageError, TransientError } from '../../domain/errors.js';
import { referenceRecordKey } from '../../domain/money-movements.js';
import type { ProcessorReport, ProcessorReportPage } from '../../domain/ports/processor-report.js';
import type { PaymentMethod } from '../../domain/records.js';
import { paymentsReportPageSchema, type PaymentsReportItem } from '../../domain/reconciliation/payments-report.js';
import type { ProcessorMovement } from '../../domain/reconciliation/match.js';
import type { ServiceCredentials } from './client-credentials.js';
import { authorizedFetch } from './http-clients.js';

type Fetch = typeof fetch;

/** One item of the payments service's report as the matcher reads it. */
export function reportItemMovement(item: PaymentsReportItem): ProcessorMovement {
  return {
    transaction_id: item.transaction_id,
    ...(item.original_transaction_id !== undefined ? { original_transaction_id: item.original_transaction_id } : {}),
    kind: item.type,
    amount_cents: item.amount_cents,
    occurred_at: item.occurred_at,
    record_key: referenceRecordKey(item.reference),
    user_id: item.reference.user_id,
  };
}

/**
 * The payments service's report (ACH and pinless), `GET /reports/transactions`, read page by page
 * and filtered to one rail. A page that breaks the contract is the service's fault, never ours.
 */
export class HttpPaymentsReport implements ProcessorReport {
  constructor(
    private readonly baseUrl: string,
    private readonly credentials: ServiceCredentials,
    private readonly fetchImpl: Fetch = fetch,
  ) {}

  async page(rail: PaymentMethod, from: string, to: string, cursor: string | null, signal?: AbortSignal): Promise<ProcessorReportPage> {
    const url = new URL('/reports/transactions', this.baseUrl);
    url.searchParams.set('from', from);
    url.searchParams.set('to', to);
    if (cursor !== null) url.searchParams.set('cursor', cursor);
    const response = await authorizedFetch(this.fetchImpl, url.toString(), { method: 'GET', ...(signal ? { signal } : {}) }, this.credentials);
    if (response.status === 401) throw new ProcessorOutageError('payments', 'processor_auth', { cause: new Error('payments report answered 401') });
    if (response.status === 429 || response.status >= 500) throw new TransientError(`payments report answered ${response.status}`);
    if (!response.ok) throw new ProcessorError('processor_rejected', `The payments report refused the request (${response.status}).`);
    const parsed = safeParseCold(paymentsReportPageSchema, await response.json().catch(() => undefined));
    if (!parsed.success) throw new ProcessorError('processor_bad_answer', 'The payments report broke its contract.');
    return { items: parsed.data.items.filter((item) => item.rail === rail).map(reportItemMovement), next: parsed.data.next };
  }
}
