/** Creating a thread for a run of a workflow. */
import { withThreadId } from '../conversation/index.ts';
import type { ConversationState } from '../conversation/types.ts';
import { createEvent, type ThreadCreatedEvent } from '../events.ts';
import type { Workflow } from '../model/schema.ts';
import { deepCopy } from './clone.ts';
import type { EngineEnv, Thread, ThreadMetadata, Variables } from './types.ts';
import { initialScopes } from './variables.ts';

export interface CreateThreadOptions {
  workflow: Pick<Workflow, 'id' | 'version' | 'variables'>;
  input?: Variables;
  env: EngineEnv;
  /** The thread's conversation; it is re-labelled with the new thread's id. */
  conversation: ConversationState;
  /** Use this id instead of env.newId() (e.g. one derived from the execution name, for idempotency). */
  id?: string;
  metadata?: ThreadMetadata;
}

export interface CreateThreadResult {
  thread: Thread;
  event: ThreadCreatedEvent;
}

/**
 * A new thread in status CREATED: declared global and thread variables set to deep copies of their
 * initial values (INVALID_VARIABLE if one does not fit its declared type), input deep-copied.
 */
export function createThread(options: CreateThreadOptions): CreateThreadResult {
  const { workflow, env } = options;
  const id = options.id ?? env.newId();
  const startTime = env.now();
  const thread: Thread = {
    id,
    workflowId: workflow.id,
    workflowVersion: workflow.version,
    status: 'CREATED',
    input: deepCopy(options.input ?? {}),
    variables: initialScopes(workflow.variables),
    nodeResults: {},
    executionHistory: [],
    errors: [],
    metadata: deepCopy(options.metadata ?? {}),
    contextData: {},
    conversation: withThreadId(options.conversation, id),
    startTime,
  };
  const event = createEvent('THREAD_CREATED', {
    threadId: id,
    workflowId: workflow.id,
    at: startTime,
    workflowVersion: workflow.version,
  });
  return { thread, event };
}
