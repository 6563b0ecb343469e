import * as reconciliation from '../handlers/api/reconciliation.js';
import { readErrors } from './common-responses.js';
import type { OperationSpec } from './document.js';

/** The reconciliation routes (DESIGN 14) of the OpenAPI document, beside its other operations. */

export const RECONCILIATION_OPERATIONS: Readonly<Record<string, OperationSpec>> = {
  'GET /v1/reconciliation/runs': {
    operationId: 'listReconciliationRuns',
    summary: "A day's reconciliation runs, one per rail that ran, with both sides' totals and the drifts",
    description: 'Without `date`, yesterday (UTC): the day the daily schedule reconciles. Gross drift is the sum of the exceptions\' absolute amounts; 0 means the day balances.',
    tag: 'operator',
    query: reconciliation.runsQuery,
    responses: { '200': { description: "The day's runs", schema: 'ReconciliationRunList' }, ...readErrors },
  },
  'GET /v1/reconciliation/runs/{date}/{rail}': {
    operationId: 'getReconciliationRun',
    summary: 'One run with its exceptions: code, signed amount, member, transaction and resolution',
    tag: 'operator',
    path: reconciliation.runParams,
    responses: { '200': { description: 'The run and its current exceptions', schema: 'ReconciliationRunDetail' }, ...readErrors, '404': { description: 'No run of that day on that rail (or no route)', schema: ['Error', 'GatewayMessage'] } },
  },
  'POST /v1/reconciliation/exceptions/{id}/resolve': {
    operationId: 'resolveReconciliationException',
    summary: 'An operator resolves a reconciliation exception: refunded, recorded, written_off or no_action (reason required)',
    description:
      'The resolution, the reason, the actor (the token\'s subject) and the instant are stored on the exception, which leaves its rail\'s open list (the `billing_reconciliation_open_exceptions` gauge). ' +
      'A later run of its day keeps the resolution. Nothing moves money: a refund is made at the processor and arrives as its own movement. An exception already resolved answers 409 already_resolved.',
    tag: 'operator',
    path: reconciliation.exceptionParams,
    body: { schema: reconciliation.resolveBody, required: true },
    responses: {
      '200': { description: 'The exception with its resolution', schema: 'ReconciliationException' },
      ...readErrors,
      '404': { description: 'No exception with that id (or no route)', schema: ['Error', 'GatewayMessage'] },
      '409': { description: 'already_resolved: a resolution is never overwritten', schema: 'Error' },
    },
  },
};
