import { createHash } from 'node:crypto';
import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import { getLoanPayment, listLoanPayments, listLoanPaymentHistory, makeLoanPayment } from '../../domain/use-cases/make-loan-payment.js';
import { positiveCentsSchema } from '../../domain/money.js';
import { chargeCentsSchema } from '../../domain/payment-maximum.js';
import { loanPaymentStatusSchema } from '../../domain/loan-payments.js';
import { json, parseJsonBody, type HttpResult } from '../shared/http.js';
import { serializeLoanPayment, serializeLoanPaymentHistoryRow, serializePage } from '../shared/serialize.js';
import { cursorSchema, idSchema, idempotencyKey, limitSchema, pathParams, queryParams } from './request.js';
import type { RouteContext } from './router.js';

/** Loan payments (DESIGN 2.7): list (newest first), get, history, and a user's payment keyed by Idempotency-Key. */

export const loanParams = lazySchema(() => z.object({ userId: idSchema, loanId: idSchema }));
export const paymentParams = lazySchema(() => z.extend(loanParams, { paymentId: idSchema }));
export const listQuery = lazySchema(() => z.strictObject({ limit: limitSchema, next: z.optional(cursorSchema), status: z.optional(loanPaymentStatusSchema) }));
export const historyQuery = lazySchema(() => z.strictObject({ limit: limitSchema, next: z.optional(cursorSchema) }));
export const newPaymentBody = lazySchema(() => z.strictObject({
  amount_cents: positiveCentsSchema,
  payment_method: z.enum(['ach', 'pinless']),
  account_last_four: z.optional(z.string().check(z.regex(/^\d{4}$/, 'four digits'))),
  intended_installment_id: z.optional(idSchema),
}));

/** The payment id a request's Idempotency-Key stands for: the same user, loan and key always give the same id. */
export function loanPaymentId(userId: string, loanId: string, key: string): string {
  const digest = createHash('sha256').update(`${userId}\n${loanId}\n${key}`, 'utf8').digest('hex');
  return `pay_${digest.slice(0, 32)}`;
}

export async function listPayments(ctx: RouteContext): Promise<HttpResult> {
  const { userId, loanId } = pathParams(ctx.params, loanParams);
  ctx.annotate({ user_id: userId });
  const query = queryParams(ctx.event, listQuery);
  const page = await listLoanPayments(ctx.deps, userId, loanId, { limit: query.limit, cursor: query.next ?? null, status: query.status });
  return json(200, serializePage(page, serializeLoanPayment));
}

export async function getPayment(ctx: RouteContext): Promise<HttpResult> {
  const { userId, loanId, paymentId } = pathParams(ctx.params, paymentParams);
  ctx.annotate({ user_id: userId });
  return json(200, serializeLoanPayment(await getLoanPayment(ctx.deps, userId, loanId, paymentId)));
}

export async function getPaymentHistory(ctx: RouteContext): Promise<HttpResult> {
  const { userId, loanId, paymentId } = pathParams(ctx.params, paymentParams);
  ctx.annotate({ user_id: userId });
  const query = queryParams(ctx.event, historyQuery);
  const page = await listLoanPaymentHistory(ctx.deps, userId, loanId, paymentId, { limit: query.limit, cursor: query.next ?? null });
  return json(200, serializePage(page, serializeLoanPaymentHistoryRow));
}

/** The body as validated: the amount also bounded by the configured payment maximum. */
let bounded: { readonly maxCents: number; readonly schema: typeof newPaymentBody } | undefined;
function boundedPaymentBody(maxCents: number): typeof newPaymentBody {
  if (bounded?.maxCents !== maxCents) bounded = { maxCents, schema: z.extend(newPaymentBody, { amount_cents: chargeCentsSchema(maxCents) }) };
  return bounded.schema;
}

export async function createPayment(ctx: RouteContext): Promise<HttpResult> {
  const { userId, loanId } = pathParams(ctx.params, loanParams);
  ctx.annotate({ user_id: userId });
  const key = idempotencyKey(ctx.event);
  const body = parseJsonBody(ctx.event, boundedPaymentBody(ctx.deps.settings.maxPaymentCents));
  const { payment, created } = await makeLoanPayment(ctx.deps, {
    user_id: userId,
    loan_id: loanId,
    payment_id: loanPaymentId(userId, loanId, key),
    amount_cents: body.amount_cents,
    payment_method: body.payment_method,
    account_last_four: body.account_last_four,
    intended_installment_id: body.intended_installment_id,
    actor: ctx.actor,
  });
  return json(created ? 201 : 200, serializeLoanPayment(payment));
}
