import { lazily, type ServiceWiring } from './types.js';

/**
 * Card charges and PaymentIntent lookups through the Stripe SDK (247 KiB minified), loaded on the
 * first card charge or lookup rather than at cold start: most first calls charge no card. In a
 * Lambda bundle `stripe` is external and this `import('stripe')` loads the asset's own
 * node_modules/stripe/index.mjs, pre-bundled beside the main file (lib/bundling.ts); from
 * TypeScript (local runtime, tests) it is the installed package. This is the SDK's one value
 * import: the adapters take the client, and its error classes from it.
 */
export const stripe: ServiceWiring = ({ secret }) => {
  const apiKey = secret('stripeApiKey');
  const load = lazily(async () => {
    const [{ default: Stripe }, { StripeCardProcessor, StripeCustomerSearchResolver }, { StripePaymentIntentDirectory }] = await Promise.all([
      import('stripe'),
      import('../../adapters/stripe/processor.js'),
      import('../../adapters/stripe/payment-directory.js'),
    ]);
    const client = new Stripe(apiKey, { maxNetworkRetries: 1, timeout: 10_000 });
    return {
      card: new StripeCardProcessor({ stripe: client, customers: new StripeCustomerSearchResolver(client) }),
      cardPayments: new StripePaymentIntentDirectory(client),
    };
  });
  return {
    processor: { submit: async (request, signal) => (await load()).card.submit(request, signal) },
    cardPayments: { findReference: async (paymentIntentId) => (await load()).cardPayments.findReference(paymentIntentId) },
  };
};
