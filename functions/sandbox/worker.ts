/**
 * Worker thread entry: loads QuickJS, then runs one job per message, in order. The main thread
 * terminates this worker when a job overruns or the engine reports itself broken.
 */

import { parentPort } from 'node:worker_threads';
import { executeJob } from './execute.ts';
import { loadQuickJS, wasmMemoryBytes } from './quickjs-module.ts';
import type { FromWorkerMessage, ToWorkerMessage } from './types.ts';

const port = parentPort;
if (!port) throw new Error('the sandbox worker must run in a worker thread');

const quickjs = await loadQuickJS();

port.on('message', (message: ToWorkerMessage) => {
  const { outcome, broken } = executeJob(quickjs, message.job);
  const reply: FromWorkerMessage = {
    kind: 'done',
    id: message.id,
    outcome,
    broken,
    wasmMemoryBytes: wasmMemoryBytes(quickjs),
  };
  port.postMessage(reply);
});

const ready: FromWorkerMessage = { kind: 'ready' };
port.postMessage(ready);
