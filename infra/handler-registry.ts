/**
 * The one place that says which Lambda runs each node type, where its code is, how big it is and what
 * it may touch. The runtime construct, the state machine substitutions and the bundle bench all read it.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { substitutionKey } from '../engine/asl/index.ts';
import { NODE_TYPES, type NodeType } from '../engine/model/schema.ts';

export { substitutionKey };

/** The repository (or installed package) root; handler entries are resolved against it. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** DynamoDB actions a handler may use, on the table and its GSI (listings). */
export type TableAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:PutItem'
  | 'dynamodb:BatchWriteItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:Query';

/** What a handler does with conversation segments in the bucket. */
export type ConversationAccess = 'none' | 'read' | 'write' | 'read-write';

export interface HandlerSpec {
  readonly type: NodeType;
  /** Entry file, relative to PROJECT_ROOT. */
  readonly entry: string;
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
  readonly table: readonly TableAction[];
  readonly conversation: ConversationAccess;
  /** Reads the LLM profiles' secrets and invokes their Bedrock models. */
  readonly callsModels: boolean;
  /** Runs workflow tools: invokes their Lambda functions and reads their http secrets. */
  readonly callsTools: boolean;
  /** Runs the CODE sandbox (CODE nodes, `code` tools): ships `sandbox-worker.mjs` next to the bundle. */
  readonly sandboxWorker: boolean;
}

// Every handler loads its thread (GetItem, or BatchGetItem for a fork child and its root thread, and
// for the node results it reads), writes the step's record (PutItem) and commits the step with one
// conditional UpdateItem (END and failures also update the execution item), then keeps the node's
// result when a later node reads it (PutItem). Query reads one thread's own partition: every node
// result for a node that reads `nodes` as a whole, a JOIN's branch results. START, FORK and
// USER_INTERACTION also create items with PutItem (threads, the execution index, interactions).
const THREAD_STEP: readonly TableAction[] = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:UpdateItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
];

interface SpecOverrides {
  memoryMb?: number;
  timeoutSeconds?: number;
  table?: readonly TableAction[];
  conversation?: ConversationAccess;
  callsModels?: boolean;
  callsTools?: boolean;
  sandboxWorker?: boolean;
}

// Keep in step with functions/nodes: a handler only writes segments after reading the conversation
// (`readsConversation`), so every writer is 'read-write'.
const OVERRIDES: Readonly<Record<NodeType, SpecOverrides>> = {
  // Creates the root thread and the execution index entry.
  START: { table: THREAD_STEP },
  END: {},
  VARIABLE: {},
  // The sandbox (QuickJS in a worker) needs headroom above the script's own memory limit (≤ 1024 MB).
  CODE: { memoryMb: 1536, timeoutSeconds: 900, sandboxWorker: true },
  // Creates one child thread per path, heads and listings together in BatchWriteItems of 25
  // (thread-store.ts createForkChildren).
  FORK: { table: [...THREAD_STEP, 'dynamodb:BatchWriteItem'] },
  // Reads the children in one BatchGetItem and records branch outcomes on the join item. Takes the
  // branches' node results into the parent: when later nodes read more than one of them, it keeps
  // them in one BatchWriteItem (thread-store.ts putNodeResults).
  JOIN: { table: [...THREAD_STEP, 'dynamodb:BatchWriteItem'] },
  ROUTE: {},
  LOOP_START: {},
  LOOP_END: {},
  // Reads the conversation, appends the replies and tool results; model calls can be slow; the
  // tools it offers the model may be `code` tools, which run in the sandbox.
  LLM: {
    memoryMb: 512,
    timeoutSeconds: 900,
    conversation: 'read-write',
    callsModels: true,
    callsTools: true,
    sandboxWorker: true,
  },
  // Its output goes to node results and a variable, never to the conversation.
  TOOL: { memoryMb: 512, timeoutSeconds: 300, callsTools: true, sandboxWorker: true },
  // Records the pending interaction (with its task token) as its own item; an answer becomes a message.
  USER_INTERACTION: { table: THREAD_STEP, conversation: 'read-write' },
  CONTEXT_PROCESSOR: { conversation: 'read-write' },
  // Subgraph boundaries push/pop the subgraph scope and apply mappings.
  SUBGRAPH: {},
};

function entryFor(type: NodeType): string {
  return `functions/handlers/${type.toLowerCase().replace(/_/g, '-')}.ts`;
}

export const HANDLER_SPECS: Readonly<Record<NodeType, HandlerSpec>> = Object.fromEntries(
  NODE_TYPES.map((type) => {
    const o = OVERRIDES[type];
    const spec: HandlerSpec = {
      type,
      entry: entryFor(type),
      memoryMb: o.memoryMb ?? 256,
      timeoutSeconds: o.timeoutSeconds ?? 30,
      table: o.table ?? THREAD_STEP,
      conversation: o.conversation ?? 'none',
      callsModels: o.callsModels ?? false,
      callsTools: o.callsTools ?? false,
      sandboxWorker: o.sandboxWorker ?? false,
    };
    return [type, spec];
  }),
) as Record<NodeType, HandlerSpec>;

/** The node type a substitution key stands for, or undefined when it is not a function placeholder. */
export function nodeTypeOfSubstitutionKey(key: string): NodeType | undefined {
  return NODE_TYPES.find((type) => substitutionKey(type) === key);
}

export function handlerEntryPath(type: NodeType, root: string = PROJECT_ROOT): string {
  return `${root.replace(/\/$/, '')}/${HANDLER_SPECS[type].entry}`;
}

/** Folder name of a handler's prebuilt bundle: `lambda/<type in kebab case>/`. */
export function bundleDirName(type: NodeType): string {
  return type.toLowerCase().replace(/_/g, '-');
}

/**
 * Prebuilt handler bundles (`index.mjs`, plus `sandbox-worker.mjs` where the sandbox runs) that
 * `npm run build` writes to `dist/lambda/`. The installed package ships them: it has no sources and no
 * lock file to bundle from. From the repository's sources this folder does not exist.
 */
export const PREBUILT_BUNDLES_DIR = fileURLToPath(new URL('../lambda/', import.meta.url));

/** The prebuilt bundle folder of a node type, when this is the compiled package and it has one. */
export function prebuiltBundleDir(type: NodeType): string | undefined {
  const dir = `${PREBUILT_BUNDLES_DIR}${bundleDirName(type)}`;
  return existsSync(`${dir}/index.mjs`) ? dir : undefined;
}

/**
 * Node types deployable from `root`: those whose handler module exists there, or, for the default
 * root of the installed package, those with a prebuilt bundle.
 */
export function availableHandlerTypes(root: string = PROJECT_ROOT): NodeType[] {
  return NODE_TYPES.filter(
    (type) =>
      existsSync(handlerEntryPath(type, root)) ||
      (root === PROJECT_ROOT && prebuiltBundleDir(type) !== undefined),
  );
}
