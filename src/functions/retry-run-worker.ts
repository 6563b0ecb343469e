import { createRetryRunWorkerHandler } from '../handlers/retry-run-worker.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { collectingServices } from '../runtime/wiring/collecting.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';

/** The retry-run-worker Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('retry-run-worker', createRetryRunWorkerHandler, { secretsManager, services: collectingServices });
