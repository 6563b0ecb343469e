/** Typed domain errors with a stable `code`: callers map them by `instanceof`, never by message text. */
export abstract class DomainError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A fault of the system, never of the request: the API answers 500 with a reference, the details go to the log. */
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

/** A conditional write met a record that changed since it was read. */
export class ConcurrentModificationError extends DomainError {
  override readonly name = 'ConcurrentModificationError';
  readonly code = 'concurrent_modification';
}

export class AlreadyExistsError extends DomainError {
  override readonly name = 'AlreadyExistsError';
  readonly code = 'already_exists';
}

export class LockedError extends DomainError {
  override readonly name = 'LockedError';
  readonly code = 'locked';
}

/** The holder must stop writing. */
export class LockLostError extends InternalFaultError {
  override readonly name = 'LockLostError';
  readonly code = 'lock_lost';
}

/** A change refused because the record's period is due and unbilled: it would erase what is owed. */
export class UnbilledPeriodError extends DomainError {
  override readonly name = 'UnbilledPeriodError';
  readonly code = 'unbilled_period';
}

export class PreconditionFailedError extends DomainError {
  override readonly name = 'PreconditionFailedError';
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** A payment refused by a hold that binds every path (DESIGN 3.1): nothing changed or charged, 409 with `code`. */
export class PaymentHoldError extends DomainError {
  override readonly name = 'PaymentHoldError';
  readonly code: string;
  /** The named rule that refused it (DESIGN 3.2), and the instrument held when it is one. */
  readonly decidedBy: string | undefined;
  readonly instrumentId: string | undefined;
  constructor(code: string, message: string, decided?: { readonly decided_by?: string; readonly instrument_id?: string }) {
    super(message);
    this.code = code;
    this.decidedBy = decided?.decided_by;
    this.instrumentId = decided?.instrument_id;
  }
}

/** Throttling, a lost connection, a transaction conflict: retried, never counted. */
export class TransientError extends DomainError {
  override readonly name: string = 'TransientError';
  readonly code = 'transient';
}

/**
 * The processor refused the request for its rate limit (Stripe's `rate_limit`, the payments
 * service's 429): nothing was presented. Never counted, never a dunning move (DESIGN 13).
 */
export class ProcessorThrottledError extends TransientError {
  override readonly name: string = 'ProcessorThrottledError';
  constructor(
    readonly processor: 'stripe' | 'payments',
    options?: { cause?: unknown },
  ) {
    super(`the ${processor} processor throttled the request`, options);
  }
}

/** The invocation's own deadline or abort signal: never counted. */
export class InterruptedError extends InternalFaultError {
  override readonly name = 'InterruptedError';
  readonly code = 'interrupted';
}

/** A processor error that is not a decline: counted. */
export class ProcessorError extends DomainError {
  override readonly name = 'ProcessorError';
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** An Idempotency-Key sent again with a different request (422). */
export class IdempotencyKeyReusedError extends DomainError {
  override readonly name = 'IdempotencyKeyReusedError';
  readonly code = 'idempotency_key_reused';
}

/** The request holding this Idempotency-Key is still running (409). */
export class RequestInProgressError extends DomainError {
  override readonly name = 'RequestInProgressError';
  readonly code = 'request_in_progress';
}

/**
 * Our own outage, never the member's (DESIGN 15): a processor refused our credentials or
 * configuration (`processor_auth`), or its circuit is open (`circuit_open`). Nothing is counted,
 * dunning does not move, nothing is written.
 */
export class ProcessorOutageError extends DomainError {
  override readonly name = 'ProcessorOutageError';
  readonly code = 'processor_outage';
  constructor(
    /** The outside service that refused us (`stripe`, `payments`, `accounts`). */
    readonly service: string,
    readonly reason: 'processor_auth' | 'circuit_open',
    options?: { cause?: unknown },
  ) {
    super('The payment processor is unavailable.', options);
  }
}

/** A reconciliation exception already carries a resolution (409): a resolution is an audit record, never overwritten. */
export class AlreadyResolvedError extends DomainError {
  override readonly name = 'AlreadyResolvedError';
  readonly code = 'already_resolved';
}
