import type { CardPaymentDirectory } from '../../domain/card-outcomes.js';
import type { AccountDirectory } from '../../domain/ports/account-directory.js';
import type { PaymentProcessor } from '../../domain/ports/processor.js';
import type { ProcessorReport } from '../../domain/ports/processor-report.js';
import type { QueuePort } from '../../domain/ports/queue.js';
import type { SecretId, ServiceId } from '../../manifest/index.js';

/**
 * The adapters a function's entry module hands to its composition (src/runtime/production.ts),
 * one per heavy dependency. Each lives in its own module, so an entry that does not import it
 * does not bundle it: the Stripe SDK, the SQS client, the Secrets Manager client and the payments
 * service clients reach only the functions whose manifest names them. The composition refuses a
 * wiring that differs from the manifest (missing or extra adapters) at cold start.
 */
export interface Wiring {
  /** Resolves secret ARNs (AWS); secrets given by value (local runtime, tests) never load it. Present iff the manifest names secrets. */
  readonly secretsManager?: SecretsManagerWiring;
  /** SQS senders; present iff the manifest names queues to send to. */
  readonly sqs?: SqsWiring;
  /** The clients of each outside service, by manifest id: exactly the services the manifest names. */
  readonly services?: Partial<Record<ServiceId, ServiceWiring>>;
}

export type SecretsManagerWiring = (arns: readonly string[], region: string) => Promise<string[]>;

export type SqsWiring = (options: { readonly region: string; readonly endpoint?: string | undefined }) => (queueUrl: string) => QueuePort;

/** What one service's clients give a function: a processor (for the rails its manifest entry names), the account directory, card payment lookups. */
export interface ServiceClients {
  readonly processor?: PaymentProcessor;
  readonly accounts?: AccountDirectory;
  readonly cardPayments?: CardPaymentDirectory;
  /** What the processor reports it moved, per rail it runs (DESIGN 14). */
  readonly report?: ProcessorReport;
}

/**
 * Builds one service's clients from its URL (services with a `urlEnv`), its token endpoint (with a
 * `tokenUrlEnv`) and the function's secrets; `granted` says which secrets its manifest names.
 */
export type ServiceWiring = (config: {
  readonly url: string;
  readonly tokenUrl?: string;
  readonly secret: (id: SecretId) => string;
  readonly granted: (id: SecretId) => boolean;
}) => ServiceClients;

/**
 * A port whose implementation is loaded and built on first use (a dynamic import: esbuild keeps
 * the module in the same bundle but evaluates it only then, or, for a side package such as the
 * Stripe SDK, leaves it to a file of its own: lib/bundling.ts). A failed load is retried next time.
 */
export function lazily<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    loaded ??= load().catch((error: unknown) => {
      loaded = undefined;
      throw error;
    });
    return loaded;
  };
}
