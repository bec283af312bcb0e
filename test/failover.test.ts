// The failover drill, short (issue 23; `npm run chaos:failover` is the full one): a primary and a synchronous streaming
// standby from Debian's PostgreSQL 15, the real host behind a TCP endpoint, buyers (half paying) on a few units; the
// primary SIGKILLed mid-storm, the standby promoted, the endpoint moved. On the new primary every acknowledged order
// exists, nothing is oversold or duplicated, the ledger balances, payments are decided and the outbox drained; no
// answer was a fault (a lost database is DATABASE_UNAVAILABLE, which the buyers retry with their keys).
import { describe, expect, it } from 'vitest';
import { formatDrill, runFailoverDrill } from '../kit/failover.js';

describe('a primary failover with a synchronous standby', () => {
  it('loses no acknowledged order: 120 buyers on 45 units, the primary killed after 15 acknowledgements', async () => {
    const r = await runFailoverDrill({ synchronous: true, buyers: 120, units: 45, concurrency: 24, killAfterAcks: 15 });
    console.log(formatDrill(r));
    expect(r.acknowledged).toBe(45);
    expect(r.refused).toBe(75);
    expect(r.unanswered).toBe(0);
    expect(r.acknowledgedLost).toBe(0);
    expect(r.oversold).toBe(0);
    expect(r.duplicates).toBe(0);
    expect(r.ledger).toEqual([]);
    expect(r.undecidedPayments).toBe(0);
    expect(r.outboxLeft).toBe(0);
    expect(Object.keys(r.answers).filter((k) => /INTERNAL_SERVER_ERROR|other/.test(k))).toEqual([]);
  }, 240_000);
});
