/**
 * What paths a person starts have debited one member in one UTC day (DESIGN 15): a counter
 * checked and added to in one conditional write, so two requests cannot both pass the limit.
 */
export interface PersonDebitCounter {
  /** Adds `cents` to the member's day unless the total would pass `limitCents`; false (nothing added) when it would. */
  reserve(userId: string, day: string, cents: number, limitCents: number): Promise<boolean>;
  /** Gives back a reservation whose attempt moved no money. */
  release(userId: string, day: string, cents: number): Promise<void>;
}
