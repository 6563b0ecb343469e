import { createBatchWorkerHandler } from '../handlers/batch-worker.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { collectingServices } from '../runtime/wiring/collecting.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';

/** The batch-worker Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('batch-worker', createBatchWorkerHandler, { secretsManager, services: collectingServices });
