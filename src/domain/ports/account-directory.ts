export type AccountStatus = 'active' | 'inactive' | 'banned' | 'closed';

/** What the gate knows about a user at decision time. Absent fields were not observed. */
export interface AccountSnapshot {
  readonly status: AccountStatus;
  /** When the account entered its current status (an instant), if the directory knows. */
  readonly status_since?: string;
  readonly institution_id?: string;
  readonly available_balance_cents?: number;
  readonly current_balance_cents?: number;
  readonly debit_card_valid?: boolean;
  readonly blocklisted?: boolean;
  readonly institution_unreliable?: boolean;
  /** Scheduled path only: the risk model overrides a failed balance check. */
  readonly ml_override?: boolean;
}

export interface AccountDirectory {
  getAccount(userId: string, signal?: AbortSignal): Promise<AccountSnapshot>;
}
