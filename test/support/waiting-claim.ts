import { claimLimited } from '../../libs/durable/src/store/flow-claim.js';
import type { ClaimRequest } from '../../libs/durable/src/store/rows.js';
import type { Store } from '../../libs/durable/src/store/store.js';

/**
 * A limited claim whose transaction begins, then waits `ms` before its first statement (as behind a
 * worker frozen while holding the queue's lock). Returns the database's clock when the transaction
 * began and when the claim was let go, and what it claimed.
 */
export async function claimAfterWaiting(
  store: Store,
  request: ClaimRequest,
  ms: number,
): Promise<{ began: Date; released: Date; claimed: Awaited<ReturnType<typeof claimLimited>> }> {
  let go!: () => void;
  let begun!: (t: Date) => void;
  const began = new Promise<Date>((r) => (begun = r));
  const claiming = claimLimited(waitingAtBegin(store, new Promise<void>((r) => (go = r)), begun), request);
  const begin = await began;
  await new Promise((r) => setTimeout(r, ms));
  const [{ t: released }] = await store.sql.query<{ t: Date }>('SELECT clock_timestamp() AS t');
  go();
  return { began: begin, released, claimed: await claiming };
}

/**
 * `store` whose transactions begin, tell `begun` the transaction's clock (now()), then wait for
 * `held` before their first statement: a claim that began and then waited for its turn.
 */
export function waitingAtBegin(store: Store, held: Promise<void>, begun: (t: Date) => void): Store {
  return {
    ...store,
    sql: {
      ...store.sql,
      transaction: (fn) =>
        store.sql.transaction(async (tx) => {
          const [{ t }] = await tx.query<{ t: Date }>('SELECT now() AS t');
          begun(t);
          await held;
          return fn(tx);
        }),
    },
  };
}
