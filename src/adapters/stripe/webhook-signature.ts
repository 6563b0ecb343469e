import { StripeSignatureVerificationError } from '../../../node_modules/stripe/esm/Error.js';
import { NodePlatformFunctions } from '../../../node_modules/stripe/esm/platform/NodePlatformFunctions.js';
import { createWebhooks } from '../../../node_modules/stripe/esm/Webhooks.js';

/**
 * Stripe's own webhook signature check, without the rest of its SDK: `Stripe.webhooks` is
 * `createWebhooks(new NodePlatformFunctions())` (stripe.core.js, stripe.esm.node.js), and so is
 * this, from the same modules of the same installed SDK (about 16 KiB of the bundle instead of
 * 247 KiB; the API resources are what the SDK's entry point evaluates at import). The SDK's export
 * map publishes only that entry point, so these modules are imported by path; a layout change in
 * an SDK upgrade fails the typecheck and the build, and test/adapters/stripe/webhook-signature.test.ts
 * checks this is the SDK's verifier (headers from `Stripe.webhooks.generateTestHeaderString`, the
 * SDK's own error class).
 */
export const stripeWebhooks = createWebhooks(new NodePlatformFunctions());

export { StripeSignatureVerificationError };
