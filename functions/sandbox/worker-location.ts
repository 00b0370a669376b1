/**
 * Where the sandbox worker script lives. From source (tests, the CLI under tsx) the worker is
 * TypeScript, started through a small .mjs bootstrap that registers tsx inside the worker (hooks
 * registered at run time are not passed on to worker threads). In a bundle (Lambda) the worker is
 * `sandbox-worker.mjs`, built by build.ts, in the same directory as the bundle.
 */

import { pathToFileURL } from 'node:url';

export const BUNDLED_WORKER_FILE = 'sandbox-worker.mjs';
/** Overrides the worker script location (a path or file URL), e.g. for an unusual Lambda layout. */
export const WORKER_ENV_VARIABLE = 'STEPTHREAD_SANDBOX_WORKER';

export interface WorkerLaunch {
  url: URL;
  /** Set for the source bootstrap: the TypeScript entry it imports after registering tsx. */
  workerData?: { entry: string };
}

export function defaultWorkerLaunch(): WorkerLaunch {
  const fromEnv = process.env[WORKER_ENV_VARIABLE];
  if (fromEnv) return { url: fromEnv.startsWith('file:') ? new URL(fromEnv) : pathToFileURL(fromEnv) };
  const here = thisModuleUrl();
  if (/\.[cm]?ts$/.test(new URL(here).pathname)) {
    return {
      url: new URL('./worker-bootstrap.mjs', here),
      workerData: { entry: new URL('./worker.ts', here).href },
    };
  }
  return { url: new URL(`./${BUNDLED_WORKER_FILE}`, here) };
}

/** This module's URL; a CommonJS bundle has no import.meta.url but has __filename. */
function thisModuleUrl(): string {
  const url: string | undefined = import.meta.url;
  return url ? url : pathToFileURL(__filename).href;
}
