import { createBalanceWorkerHandler } from '../handlers/webhook-balance-worker.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { collectingServices } from '../runtime/wiring/collecting.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';

/** The webhook-balance-worker Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('webhook-balance-worker', createBalanceWorkerHandler, { secretsManager, services: collectingServices });
