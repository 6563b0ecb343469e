import { createApiHandler } from '../handlers/api.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { collectingServices } from '../runtime/wiring/collecting.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';
import { sqs } from '../runtime/wiring/sqs.js';

/** The api Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('api', createApiHandler, { secretsManager, sqs, services: collectingServices });
