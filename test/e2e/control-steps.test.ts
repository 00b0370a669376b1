/**
 * What the control steps of a fork/join cost in store requests, per kind of Task, as
 * bench/control-steps.ts counts them (a 4-branch fork/join after 5 LLM steps; every model a fake).
 * Counts, never times.
 */
import { describe, expect, it } from 'vitest';
import { controlRequests } from '../../bench/control-steps.ts';

describe('a 4-branch fork/join: store requests per Task', () => {
  it("makes 31: each path's last node reports the path in its own step, the decision is the report order", async () => {
    const requests = await controlRequests('forkjoin', 10, 10);
    const of = (kind: string) => requests[kind];
    // The children's heads and listings in one BatchWriteItem (no child has run before the FORK
    // returns, so nothing needs a conditional create), the FORK's record and its commit (its head reused).
    expect(of('FORK')).toEqual({ BatchWriteItem: 1, PutItem: 1, UpdateItem: 1 });
    // A branch's LLM step, the last of its path: its child and root, the run's spend added after the
    // call (a run with no budget reads none before it), its segment, record and commit, which also
    // completes the child; then the path's outcome with its place in the join's report order. The
    // last report decides with every path reported: no join to close on the root.
    expect(of('branch LLM')).toEqual({ BatchGetItem: 1, PutObject: 1, PutItem: 1, UpdateItem: 3 });
    // No report Task: a `branch-done` used to read the child, root and last record again, write the
    // completion's events batch and the child's head (3 requests and a Task per path).
    expect(of('branch JOIN branch-done')).toBeUndefined();
    // The JOIN: its threads and the join item in one BatchGetItem, the merged outputs, record, commit.
    expect(of('JOIN')).toEqual({ BatchGetItem: 1, PutObject: 1, PutItem: 1, UpdateItem: 1 });
    const total = (kind: string) => Object.values(of(kind) ?? {}).reduce((sum, n) => sum + n, 0);
    expect(total('FORK') + 4 * total('branch LLM') + total('JOIN')).toBe(31);
  });
});
