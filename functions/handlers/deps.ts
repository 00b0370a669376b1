/** What a handler needs from outside: stores, clock and ids, LLM providers, cancellation. */
import type { EngineEnv } from '../../engine/thread/types.ts';
import type { AwsClients } from '../aws/clients.ts';
import type { ProviderFactory } from '../llm/provider.ts';
import { providerForProfile } from '../llm/providers.ts';
import { type ConversationStore, createConversationStore } from '../stores/conversation-store.ts';
import { createExecutionIndex, type ExecutionIndex } from '../stores/execution-index.ts';
import { createJoinStore, type JoinStore } from '../stores/join-store.ts';
import { createThreadStore, type ThreadStore } from '../stores/thread-store.ts';

export interface HandlerStores {
  readonly threads: ThreadStore;
  readonly conversations: ConversationStore;
  readonly joins: JoinStore;
  readonly executions: ExecutionIndex;
}

export interface HandlerDeps extends HandlerStores {
  /** Clock and id source; engine results depend on nothing else. */
  readonly env: EngineEnv;
  /** LLM provider per profile (default: the built-in providers). */
  readonly providers?: ProviderFactory;
  /** Aborts slow work (an LLM call) when the run ends or the join no longer needs the branch. */
  readonly signal?: AbortSignal;
  /** The Task attempt, when known (recorded on node results). */
  readonly attempt?: number;
}

export function createHandlerStores(clients: AwsClients): HandlerStores {
  return {
    threads: createThreadStore(clients),
    conversations: createConversationStore(clients),
    joins: createJoinStore(clients),
    executions: createExecutionIndex(clients),
  };
}

export function providerFactory(deps: HandlerDeps): ProviderFactory {
  return deps.providers ?? providerForProfile;
}
