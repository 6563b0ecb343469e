import { createAchHandler } from '../handlers/ach-handler.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';

/** The ach-handler Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('ach-handler', createAchHandler, { secretsManager });
