/**
 * CTE `name`: the waits of runs that have just been cancelled end with them. A durable wait (a
 * sleep, a recv or a child wait with a deadline) is recorded as a WAITING step; once its run is
 * CANCELLED the step is CANCELLED too, in the same statement, so the step rows, getRun() and the
 * admin API agree. Resuming the run makes them WAITING again (RESUME_RUN): the same deadlines hold.
 * `ids`: a SELECT of the cancelled run ids. Index: durable_steps_pkey (run_id first).
 */
export const END_WAITS = (name: string, ids: string) => `${name} AS (
  UPDATE durable_steps SET status = 'CANCELLED'
  WHERE run_id IN (${ids}) AND status = 'WAITING')`;
