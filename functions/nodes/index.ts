/**
 * Every function's table, for the local runtime (which serves all node types in one process). A
 * Lambda entry never imports this module: it names only its own type's pieces (functions/handlers).
 */
import { END_ACTIONS } from '../handlers/actions/end.ts';
import { JOIN_ACTIONS } from '../handlers/actions/join.ts';
import { LLM_ACTIONS } from '../handlers/actions/llm.ts';
import { USER_INTERACTION_ACTIONS } from '../handlers/actions/user-interaction.ts';
import { type DispatchTable, stepOf } from '../handlers/dispatch-table.ts';
import { codeNode } from './code.ts';
import { contextProcessorNode } from './context-processor.ts';
import { forkNode } from './fork.ts';
import { loopEndNode, loopStartNode } from './loop.ts';
import { runResume } from './resume.ts';
import { routeNode } from './route.ts';
import { runStart } from './start.ts';
import { subgraphBoundaryNode } from './subgraph.ts';
import { toolNode } from './tool.ts';
import { variableNode } from './variable.ts';

/** START creates its thread rather than loading one (see start.ts). The same tables the per-type Lambda entries (functions/handlers/<type>.ts) pass, all together. */
export const ALL_FUNCTIONS: Required<DispatchTable> = {
  START: { execute: runStart, resume: runResume },
  END: END_ACTIONS,
  VARIABLE: { execute: stepOf(variableNode) },
  CODE: { execute: stepOf(codeNode) },
  FORK: { execute: stepOf(forkNode) },
  JOIN: JOIN_ACTIONS,
  ROUTE: { execute: stepOf(routeNode) },
  LOOP_START: { execute: stepOf(loopStartNode) },
  LOOP_END: { execute: stepOf(loopEndNode) },
  LLM: LLM_ACTIONS,
  TOOL: { execute: stepOf(toolNode) },
  USER_INTERACTION: USER_INTERACTION_ACTIONS,
  CONTEXT_PROCESSOR: { execute: stepOf(contextProcessorNode) },
  SUBGRAPH: { execute: stepOf(subgraphBoundaryNode) },
};
