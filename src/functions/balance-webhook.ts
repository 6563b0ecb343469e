import { createBalanceWebhookHandler } from '../handlers/balance-webhook.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';
import { sqs } from '../runtime/wiring/sqs.js';

/** The balance-webhook Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('balance-webhook', createBalanceWebhookHandler, { secretsManager, sqs });
