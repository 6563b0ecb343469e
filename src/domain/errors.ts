/**
 * Typed domain errors. Every class ends in `Error` and carries a stable `code`;
 * callers map them by `instanceof`, never by message text.
 */
export abstract class DomainError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A fault of the system itself, never of the request: a corrupt stored item, a write set the store
 * refuses, an interrupted invocation, a lost lock. The API answers 500 with a generic message and a
 * reference (the details go to the log only); no input may cause one. Conflicts are not faults.
 */
export abstract class InternalFaultError extends DomainError {}

export class IllegalTransitionError extends DomainError {
  override readonly name = 'IllegalTransitionError';
  readonly code = 'illegal_transition';
  constructor(
    readonly machine: string,
    readonly from: string,
    readonly event: string,
  ) {
    super(`${machine}: event ${event} is not allowed from status ${from}`);
  }
}

export class NotFoundError extends DomainError {
  override readonly name = 'NotFoundError';
  readonly code = 'not_found';
}

/** A conditional write met a record that changed since it was read (version fence, due key, claim). */
export class ConcurrentModificationError extends DomainError {
  override readonly name = 'ConcurrentModificationError';
  readonly code = 'concurrent_modification';
}

/** A write that would create something that already exists (a billing period, a payment, an audit row). */
export class AlreadyExistsError extends DomainError {
  override readonly name = 'AlreadyExistsError';
  readonly code = 'already_exists';
}

/** The user's billing lock is held by someone else (fail-if-locked). */
export class LockedError extends DomainError {
  override readonly name = 'LockedError';
  readonly code = 'locked';
}

/** The lease on a held lock was lost (heartbeat failed); the holder must stop writing. */
export class LockLostError extends InternalFaultError {
  override readonly name = 'LockLostError';
  readonly code = 'lock_lost';
}

/** A change refused because the record's period is due and unbilled (seed 001's lesson). */
export class UnbilledPeriodError extends DomainError {
  override readonly name = 'UnbilledPeriodError';
  readonly code = 'unbilled_period';
}

/** A request that is well-formed but not acceptable for the record as it is. */
export class PreconditionFailedError extends DomainError {
  override readonly name = 'PreconditionFailedError';
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * A payment refused by a hold that binds every path (DESIGN 3.1: an unauthorized or account-error
 * ACH return, the re-presentment limit, an open dispute). Nothing was changed or charged; 409 with `code`.
 */
export class PaymentHoldError extends DomainError {
  override readonly name = 'PaymentHoldError';
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** Transient infrastructure failure (throttling, lost connection, transaction conflict): retry, never counted. */
export class TransientError extends DomainError {
  override readonly name = 'TransientError';
  readonly code = 'transient';
}

/** The invocation's own deadline or abort signal: never counted. */
export class InterruptedError extends InternalFaultError {
  override readonly name = 'InterruptedError';
  readonly code = 'interrupted';
}

/** A processor answered with an error that is not a decline (outage, bad request). Counted. */
export class ProcessorError extends DomainError {
  override readonly name = 'ProcessorError';
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** An Idempotency-Key sent again with a different request (the IETF draft's 422): nothing is done. */
export class IdempotencyKeyReusedError extends DomainError {
  override readonly name = 'IdempotencyKeyReusedError';
  readonly code = 'idempotency_key_reused';
}

/** The request that holds this Idempotency-Key is still being processed (409; retry shortly). */
export class RequestInProgressError extends DomainError {
  override readonly name = 'RequestInProgressError';
  readonly code = 'request_in_progress';
}
