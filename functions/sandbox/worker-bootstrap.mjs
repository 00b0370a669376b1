// Source-checkout worker entry: Node 20 does not apply the parent's tsx hooks inside worker
// threads, so register tsx here before importing the TypeScript worker named in workerData.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
