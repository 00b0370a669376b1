/**
 * Types of what the state machine hands each node Lambda and what it returns (`stepthread/handlers`):
 * for code that invokes or wraps the handlers. Types only.
 */
export type {
  AslErrorOutput,
  ExecutionInput,
  IncomingEnvelope,
  NodeDescription,
  TaskAction,
  TaskEvent,
  TaskParameters,
} from '../../engine/asl/task-input.ts';
export type { Envelope } from '../../engine/thread/types.ts';
