import { lazily, type ServiceWiring } from './types.js';

/**
 * The card processor and PaymentIntent lookups through the Stripe SDK (247 KiB minified), loaded on
 * first use rather than at cold start: most first calls charge no card. This `import('stripe')` is
 * the SDK's one value import; in a Lambda it loads the side package beside the main file
 * (lib/bundling.ts).
 */
export const stripe: ServiceWiring = ({ secret, granted }) => {
  // The charging key where the manifest grants it; a function that only reads holds the read-only key.
  const apiKey = granted('stripeApiKey') ? secret('stripeApiKey') : secret('stripeReadKey');
  const load = lazily(async () => {
    const [{ default: Stripe }, { StripeCardProcessor, StripeCustomerSearchResolver }, { StripePaymentIntentDirectory }, { StripeBalanceReport }] = await Promise.all([
      import('stripe'),
      import('../../adapters/stripe/processor.js'),
      import('../../adapters/stripe/payment-directory.js'),
      import('../../adapters/stripe/balance-report.js'),
    ]);
    const client = new Stripe(apiKey, { maxNetworkRetries: 1, timeout: 10_000 });
    return {
      card: new StripeCardProcessor({ stripe: client, customers: new StripeCustomerSearchResolver(client) }),
      cardPayments: new StripePaymentIntentDirectory(client),
      report: new StripeBalanceReport(client),
    };
  });
  return {
    processor: {
      submit: async (request, signal) => (await load()).card.submit(request, signal),
      findRefund: async (query, signal) => (await load()).card.findRefund(query, signal),
    },
    cardPayments: {
      findReference: async (paymentIntentId) => (await load()).cardPayments.findReference(paymentIntentId),
      cardOfCustomer: async (customerId) => (await load()).cardPayments.cardOfCustomer(customerId),
    },
    report: { page: async (rail, from, to, cursor) => (await load()).report.page(rail, from, to, cursor) },
  };
};
