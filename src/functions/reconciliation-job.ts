import { createReconciliationJobHandler } from '../handlers/reconciliation-job.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';
import { payments } from '../runtime/wiring/payments-service.js';
import { sqs } from '../runtime/wiring/sqs.js';
import { stripe } from '../runtime/wiring/stripe.js';

/** The reconciliation-job Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('reconciliation-job', createReconciliationJobHandler, { secretsManager, sqs, services: { stripe, payments } });
