/** Chat requests an account's upstreams accepted on one UTC day, for `ZERO_CHAT_DAILY_REQUESTS_PER_ACCOUNT`. */
export interface ChatAccountDayTable {
  account_id: string;
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  requests: number;
}
