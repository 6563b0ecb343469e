import { createBalanceWorkerHandler } from '../handlers/webhook-balance-worker.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { paymentsService } from '../runtime/wiring/payments-service.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';
import { stripe } from '../runtime/wiring/stripe.js';

/** The webhook-balance-worker Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('webhook-balance-worker', createBalanceWorkerHandler, { secretsManager, stripe, paymentsService });
