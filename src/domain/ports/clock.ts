/** Time comes from here, never from `new Date()` in the domain (the local runtime simulates it). */
export interface Clock {
  now(): Date;
}
