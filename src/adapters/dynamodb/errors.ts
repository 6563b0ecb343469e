import { AlreadyExistsError, ConcurrentModificationError, DomainError, InternalFaultError, InterruptedError, TransientError } from '../../domain/errors.js';

/**
 * SDK errors → domain errors, by error name, code and CancellationReasons codes (never by
 * message text). Anything not recognised is returned unchanged: it is a bug or an outage the
 * caller counts, not something to hide.
 */

/** What a conditional write's failure means for this item in this operation. */
export type ConditionMeaning = 'exists' | 'concurrent';

const TRANSIENT_NAMES = new Set([
  'TransactionConflictException',
  'TransactionInProgressException',
  'ReplicatedWriteConflictException',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'RequestTimeout',
  'RequestTimeoutException',
  'TimeoutError',
]);

const TRANSIENT_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** CancellationReasons codes that say "try again", not "your condition is false". */
const TRANSIENT_CANCELLATION_CODES = new Set([
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
  'RequestLimitExceeded',
  'InternalServerError',
]);

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  $fault?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  CancellationReasons?: { Code?: string }[];
}

function shape(error: unknown): SdkErrorShape {
  return typeof error === 'object' && error !== null ? (error as SdkErrorShape) : {};
}

export function isConditionalCheckFailed(error: unknown): boolean {
  return shape(error).name === 'ConditionalCheckFailedException';
}

/**
 * The Code of every item of a cancelled transaction, in request order; undefined for other errors.
 * Also looks through a mapped domain error to the SDK error it carries as `cause`.
 */
export function cancellationCodes(error: unknown): (string | undefined)[] | undefined {
  const e = shape(error);
  if (e.name === 'TransactionCanceledException') return (e.CancellationReasons ?? []).map((r) => r.Code);
  if (error instanceof DomainError && error.cause !== undefined) return cancellationCodes(error.cause);
  return undefined;
}

export function isTransient(error: unknown): boolean {
  const e = shape(error);
  if (typeof e.name === 'string' && TRANSIENT_NAMES.has(e.name)) return true;
  if (typeof e.code === 'string' && TRANSIENT_NETWORK_CODES.has(e.code)) return true;
  if (e.$retryable) return true;
  const status = e.$metadata?.httpStatusCode;
  if (typeof status === 'number' && status >= 500) return true;
  const codes = cancellationCodes(error);
  return !!codes && codes.some((c) => c !== undefined && TRANSIENT_CANCELLATION_CODES.has(c));
}

export interface TransactionItemDescription {
  /** What a ConditionalCheckFailed on this item means. */
  readonly onConditionFailed: ConditionMeaning;
  /** For messages: table and key. */
  readonly label: string;
}

export interface ErrorContext {
  /** e.g. `commit`, `payments.update` */
  readonly operation: string;
  /** Single-item writes: the item's label and what a failed condition means. */
  readonly item?: TransactionItemDescription;
  /** Transactions: one description per TransactWriteItems entry, in request order. */
  readonly transactionItems?: readonly TransactionItemDescription[];
}

function conditionError(meaning: ConditionMeaning, message: string, cause: unknown): DomainError {
  return meaning === 'exists' ? new AlreadyExistsError(message, { cause }) : new ConcurrentModificationError(message, { cause });
}

/** The one mapping from an SDK error to the error a store throws. */
export function toDomainError(error: unknown, context: ErrorContext): unknown {
  if (error instanceof DomainError) return error;
  const e = shape(error);
  if (e.name === 'AbortError') return new InterruptedError(`${context.operation} was aborted`, { cause: error });
  if (isConditionalCheckFailed(error) && context.item) {
    const what = context.item.onConditionFailed === 'exists' ? 'already exists' : 'changed since it was read';
    return conditionError(context.item.onConditionFailed, `${context.operation}: ${context.item.label} ${what}`, error);
  }
  const codes = cancellationCodes(error);
  if (codes && context.transactionItems) {
    // A false condition is authoritative; a conflict or throttle beside it is not worth a retry.
    const failed = codes.findIndex((c) => c === 'ConditionalCheckFailed');
    const item = failed >= 0 ? context.transactionItems[failed] : undefined;
    if (item) {
      const what = item.onConditionFailed === 'exists' ? 'already exists' : 'changed since it was read';
      return conditionError(item.onConditionFailed, `${context.operation}: ${item.label} ${what}`, error);
    }
  }
  if (isTransient(error)) return new TransientError(`${context.operation}: transient DynamoDB failure`, { cause: error });
  return error;
}

/** A stored item that does not decode to its record: never silently repaired. An internal fault (500). */
export class CorruptItemError extends InternalFaultError {
  override readonly name = 'CorruptItemError';
  readonly code = 'corrupt_item';
}

/** A malformed or foreign pagination cursor, or a bad page limit: a client error (400). */
export class InvalidPageRequestError extends DomainError {
  override readonly name = 'InvalidPageRequestError';
  readonly code = 'invalid_page_request';
}

/** A write set DynamoDB would reject outright (over 100 items, one key twice): a programming error, an internal fault (500). */
export class InvalidTransactionError extends InternalFaultError {
  override readonly name = 'InvalidTransactionError';
  readonly code = 'invalid_transaction';
}
