import { createStripeWebhookHandler } from '../handlers/stripe-webhook.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';
import { stripe } from '../runtime/wiring/stripe.js';

/** The stripe-webhook Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('stripe-webhook', createStripeWebhookHandler, { secretsManager, services: { stripe } });
