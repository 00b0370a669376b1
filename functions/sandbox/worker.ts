/**
 * Worker thread entry: loads QuickJS, then runs one job per message, in order. The main thread
 * terminates this worker when a job overruns or the engine reports itself broken.
 */

import { parentPort } from 'node:worker_threads';
import { executeJob } from './execute.ts';
import { loadQuickJS, wasmCapBytes, wasmMemoryBytes } from './quickjs-module.ts';
import { DEFAULT_MEMORY_LIMIT_BYTES, type FromWorkerMessage, type ToWorkerMessage } from './types.ts';

const port = parentPort;
if (!port) throw new Error('the sandbox worker must run in a worker thread');

/**
 * One QuickJS instance at a time, its memory capped for the job's limit (quickjs-module.ts). A job
 * with another limit gets a fresh instance; the old one's memory is left to the garbage collector.
 */
let loaded = {
  capBytes: wasmCapBytes(DEFAULT_MEMORY_LIMIT_BYTES),
  quickjs: await loadQuickJS(wasmCapBytes(DEFAULT_MEMORY_LIMIT_BYTES)),
};

port.on('message', async (message: ToWorkerMessage) => {
  const capBytes = wasmCapBytes(message.job.memoryLimitBytes);
  if (loaded.capBytes !== capBytes) loaded = { capBytes, quickjs: await loadQuickJS(capBytes) };
  const { outcome, broken } = executeJob(loaded.quickjs, message.job);
  const reply: FromWorkerMessage = {
    kind: 'done',
    id: message.id,
    outcome,
    broken,
    wasmMemoryBytes: wasmMemoryBytes(loaded.quickjs),
  };
  port.postMessage(reply);
});

const ready: FromWorkerMessage = { kind: 'ready' };
port.postMessage(ready);
