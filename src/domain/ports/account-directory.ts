import type * as z from '../zod.js';
import type { accountSnapshotSchema } from '../records.js';

/**
 * What the gate knows about a user at decision time, as the directory's answer is validated; absent
 * fields were not observed. `status_since`: when the account entered its status; `ml_override`
 * (scheduled path only): the risk model overrides a failed balance check.
 */
export type AccountSnapshot = Readonly<z.infer<typeof accountSnapshotSchema>>;

export interface AccountDirectory {
  getAccount(userId: string, signal?: AbortSignal): Promise<AccountSnapshot>;
}
