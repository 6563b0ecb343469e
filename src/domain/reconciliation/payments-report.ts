import * as z from '../zod.js';
import { lazySchema } from '../lazy-schema.js';
import { idSchema } from '../ids.js';
import { centsSchema } from '../money.js';
import { instantSchema } from '../time.js';

/**
 * The payments service's report of what moved (DESIGN 14), an external contract shared by the
 * adapter that reads it and the simulator that answers it:
 * `GET {PAYMENTS_API_URL}/reports/transactions?from=<instant>&to=<instant>&cursor=` → a page.
 * `rail` is our addition: the service runs two rails and a refund or a debit does not say which.
 */
export const PAYMENTS_REPORT_TYPES = ['debit', 'settlement', 'return', 'refund', 'chargeback'] as const;

export const paymentsReportReferenceSchema = lazySchema(() => z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('subscription'), user_id: idSchema, billing_date: instantSchema, subscription_id: idSchema }),
  z.object({ kind: z.literal('loan_payment'), user_id: idSchema, loan_id: idSchema, payment_id: idSchema }),
]));

export const paymentsReportItemSchema = lazySchema(() => z.object({
  transaction_id: idSchema,
  original_transaction_id: z.optional(idSchema),
  type: z.enum(PAYMENTS_REPORT_TYPES),
  rail: z.enum(['ach', 'pinless']),
  amount_cents: centsSchema,
  return_code: z.optional(z.string().check(z.regex(/^R\d{2}$/))),
  occurred_at: instantSchema,
  reference: paymentsReportReferenceSchema,
  instrument_id: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
}));
export type PaymentsReportItem = z.infer<typeof paymentsReportItemSchema>;

export const paymentsReportPageSchema = lazySchema(() => z.object({
  items: z.array(paymentsReportItemSchema),
  next: z.nullable(z.string().check(z.minLength(1), z.maxLength(2048))),
}));
export type PaymentsReportPage = z.infer<typeof paymentsReportPageSchema>;
