// The hook the domain calls after a committed write that produced outbox rows (never inside the transaction).

/**
 * Told after commit: wakes the outbox relays and, given the SKUs whose stock moved, lets the host drop its cached
 * figures of them (read-your-writes). Hosts without a relay pass nothing.
 */
export type AfterCommit = (skus?: string[]) => void | Promise<void>;
