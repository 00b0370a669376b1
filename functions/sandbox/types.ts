/** Requests, results and the main-thread ⇄ worker protocol of the CODE sandbox. */

import type { CodedError } from '../../engine/errors.ts';

export const SANDBOX_ERROR_CODES = [
  'CODE_TIMEOUT',
  'CODE_MEMORY_LIMIT',
  'CODE_STACK_OVERFLOW',
  'CODE_ERROR',
  'CODE_OUTPUT_TOO_LARGE',
  'CODE_INVALID_OUTPUT',
  'CODE_INVALID_INPUT',
  'CODE_SANDBOX_CRASHED',
] as const;
export type SandboxErrorCode = (typeof SANDBOX_ERROR_CODES)[number];

export interface SandboxRequest {
  /** Body of an async function: `input` is in scope, `await` works, the return value is the output. */
  code: string;
  /** JSON data (variables snapshot and node inputs). `undefined` leaves `input` undefined. */
  input: unknown;
  /** Default 1000. Covers parsing the input, running the code, settling its promise, serialising. */
  timeoutMs?: number;
  /** Default 32. Bounds QuickJS's allocations; its WebAssembly memory gets this plus 16 MB (quickjs-module.ts). */
  memoryLimitMb?: number;
  /** Default 256 KiB, measured as UTF-8 bytes of the output JSON. */
  maxOutputBytes?: number;
  /** Only compile the code (a syntax check): nothing of it runs, and the output is null. */
  compileOnly?: boolean;
}

export interface SandboxError extends CodedError {
  code: SandboxErrorCode;
  /** 1-based line in `code` where a CODE_ERROR was thrown, when QuickJS reports it. */
  line?: number;
}

/** What the log bounds cut (guest-harness.ts): lines dropped whole, characters cut from kept lines. */
export interface LogsCut {
  lines: number;
  chars: number;
}

/**
 * `logs` holds what the script printed with `console.*`, bounded (see guest-harness.ts);
 * `logsCut`, present when the bounds cut anything, says how much.
 */
export type SandboxResult =
  | { ok: true; output: unknown; durationMs: number; logs: string[]; logsCut?: LogsCut }
  | { ok: false; error: SandboxError; durationMs: number; logs: string[]; logsCut?: LogsCut };

export interface Sandbox {
  /** Never throws because of what the code does; rejects only for invalid limits (a caller bug). */
  run(request: SandboxRequest): Promise<SandboxResult>;
  /** Terminates the workers; queued and running requests end with CODE_SANDBOX_CRASHED. */
  close(): Promise<void>;
}

export interface SandboxOptions {
  /** Workers running requests in parallel (one request per worker at a time). Default 1. */
  workers?: number;
  /**
   * Extra time after a request's timeoutMs before its worker is terminated. The in-guest deadline
   * normally stops the script first; this catches time spent where QuickJS checks no deadline.
   * Default 500.
   */
  graceMs?: number;
  /**
   * Memory the workers may hold together, in MB: a worker holds up to its job's memory limit plus
   * ENGINE_OVERHEAD_BYTES, and no new worker starts past this (one always may). Default: half the
   * Lambda function's memory on Lambda, else a quarter of the machine's, at most 4096.
   */
  memoryBudgetMb?: number;
  /** A worker whose WebAssembly memory grew beyond this is replaced after its request. Default 256. */
  recycleAboveMb?: number;
  /** How long a new worker may take to load QuickJS before its requests fail. Default 15000. */
  startTimeoutMs?: number;
  /** Worker script to run instead of the default (see worker-location.ts). */
  workerUrl?: URL;
}

/** The memory limit of a request that sets none (index.ts DEFAULT_MEMORY_LIMIT_MB). */
export const DEFAULT_MEMORY_LIMIT_BYTES = 32 * 1048576;

/** A request after defaults and checks, as the worker receives it. */
export interface SandboxJob {
  code: string;
  /** The input serialised on the host; parsed inside QuickJS so no host object crosses over. */
  inputJson: string | undefined;
  timeoutMs: number;
  memoryLimitBytes: number;
  maxOutputBytes: number;
  /** Compile only: see SandboxRequest. */
  compileOnly?: boolean;
}

/** What running one job produced, before the host parses the output JSON. */
export type JobOutcome =
  | { ok: true; outputJson: string; durationMs: number; logs: string[]; logsCut?: LogsCut }
  | { ok: false; error: SandboxError; durationMs: number; logs: string[]; logsCut?: LogsCut };

export type ToWorkerMessage = { kind: 'run'; id: number; job: SandboxJob };

export type FromWorkerMessage =
  | { kind: 'ready' }
  | {
      kind: 'done';
      id: number;
      outcome: JobOutcome;
      /** The WebAssembly instance aborted or is in an unknown state: never reuse this worker. */
      broken: boolean;
      wasmMemoryBytes: number;
    };
