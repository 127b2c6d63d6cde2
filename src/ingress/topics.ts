/** Published (coalesced, at most every 20 ms) after commits that accepted deliveries: the outbox has work. */
export const DELIVERIES_ACCEPTED_TOPIC = 'webhooks.deliveries_accepted';
