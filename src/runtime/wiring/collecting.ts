import { accounts, payments } from './payments-service.js';
import { stripe } from './stripe.js';

/**
 * The service clients a collecting function's entry wires, by manifest id: every payment processor
 * and the accounts service (the manifest's COLLECTS). A new processor's wiring goes here, and no
 * entry module changes.
 */
export const collectingServices = { stripe, payments, accounts } as const;
