/**
 * `npx tsx bench/globals.ts [--n 300,1000] [--distributed]`: a FORK over `n` items whose branches all add
 * 1 to one global counter (`done + 1`: an atomic increment of the root's value), on the embedded
 * runtime (issue 31 item 4: 1,000 used to fail with `NODE_EXECUTION_FAILED: Error` once a branch
 * lost 200 read-modify-writes). Prints, per `n`: the wall time, the
 * counter at the end (it must be `n`) and the run's status or error. `--distributed` runs the FORK as a
 * Distributed Map (for 10,000 items: `--n 10000 --distributed`).
 */
import type { Workflow } from '../engine/model/schema.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';
import { createAwsClients } from '../functions/aws/clients.ts';
import { createLocalRuntime } from '../functions/local/runtime.ts';
import { startLocalServices } from '../functions/local/services.ts';

function listCounter(distributed: boolean): Workflow {
  const workflow = {
    id: 'list-counter',
    version: 1,
    variables: [{ name: 'done', type: 'number', scope: 'global', initial: 0 }],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'each',
        type: 'FORK',
        config: {
          forkPathIds: ['item'],
          forkStrategy: 'parallel',
          childNodeIds: ['inc'],
          forEach: '{{input.items}}',
          ...(distributed ? { mode: 'distributed' } : {}),
        },
      },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'done', variableType: 'number', expression: 'done + 1' },
      },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['item'], joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      },
      { id: 'end', type: 'END', config: { output: { done: '{{done}}' } } },
    ],
    edges: [
      { from: 'start', to: 'each' },
      { from: 'inc', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  };
  const checked = validateWorkflow(workflow);
  if (!checked.valid || checked.workflow === undefined) throw new Error(JSON.stringify(checked.errors));
  return checked.workflow;
}

const at = process.argv.indexOf('--n');
const counts = (at >= 0 ? process.argv[at + 1]! : '300,1000').split(',').map(Number);
const distributed = process.argv.includes('--distributed');
for (const n of counts) {
  const names = { tableName: `globals-${n}`, bucketName: `globals-${n}` };
  const services = await startLocalServices({ ephemeral: true, names });
  try {
    const runtime = createLocalRuntime({ clients: createAwsClients(services.target, names) });
    const prepared = runtime.prepare(listCounter(distributed));
    const started = performance.now();
    // As on AWS, a Task retried after its patience ran out waits its Retry interval first.
    const outcome = await prepared.run({ items: Array.from({ length: n }, (_, i) => i) });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const done = (outcome.output as { done?: number } | undefined)?.done;
    const ending = outcome.error
      ? `${outcome.error.code}: ${outcome.error.message.slice(0, 160)}`
      : outcome.status;
    console.log(
      `${String(n).padStart(6)} items${distributed ? ' (distributed)' : ''}  ${seconds.padStart(7)} s  counter ${done}  ${ending}`,
    );
  } finally {
    await services.close();
  }
}
