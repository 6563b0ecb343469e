import { resolveExceptionBody } from '../handlers/api/exception-resolution.js';
import { retryRunListQuerySchema } from '../handlers/api/retry-runs.js';
import { subscriptionParams } from '../handlers/api/subscription-actions.js';
import { readErrors } from './common-responses.js';
import type { OperationSpec } from './document.js';

/** Operator routes added with the console's exception and run views (DESIGN 12), documented as the others in document.ts. */
export const OPERATOR_OPERATIONS: Readonly<Record<string, OperationSpec>> = {
  'POST /v1/subscriptions/{subscriptionId}/exception/resolve': {
    operationId: 'resolveException',
    summary: "Operator resolution of a period's exception: accept, waive or refunded_retry (reason required)",
    description:
      'Each resolution is one transition from PENDING, FAILED or ACHSENT, under the user\'s lock, audited (actor, reason, resolution) and nothing is presented: ' +
      '`accept`: the money received settles the period (COMPLETED, `amount_received_cents`; the shortfall or surplus as `amount_difference_cents` on the audit row and the event); ' +
      '`waive`: WAIVED, the money received stays recorded; `refunded_retry`: the processor must know `refund_id` as a full refund of the money received ' +
      '(409 refund_not_found otherwise), then the period is FAILED and owed in full. A period that opened no successor opens it as after a collection. The period leaves the exceptions list.',
    tag: 'operator',
    path: subscriptionParams,
    body: { schema: resolveExceptionBody, required: true },
    responses: {
      '200': { description: 'The period as resolved', schema: 'ResolveExceptionResult' },
      ...readErrors,
      '409': { description: 'Nothing changed: see the codes', schema: 'ResolveConflict' },
      '502': { description: 'The processor could not answer the refund lookup; retry', schema: 'Error' },
    },
  },
  'GET /v1/billing/retry-runs': {
    operationId: 'listRetryRuns',
    summary: 'Past bulk retry runs, newest first: status, counts, who started each and why (paged)',
    tag: 'operator',
    query: retryRunListQuerySchema,
    responses: { '200': { description: 'One page of runs', schema: 'RetryRunList' }, ...readErrors },
  },
};
