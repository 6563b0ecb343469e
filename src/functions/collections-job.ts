import { createCollectionsJobHandler } from '../handlers/collections-job.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { accounts } from '../runtime/wiring/payments-service.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';
import { sqs } from '../runtime/wiring/sqs.js';

/** The collections-job Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('collections-job', createCollectionsJobHandler, { secretsManager, sqs, services: { accounts } });
