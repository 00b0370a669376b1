/** Node logic by node type, for the `execute` action. */
import type { NodeType } from '../../engine/model/schema.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';
import { codeNode } from './code.ts';
import { contextProcessorNode } from './context-processor.ts';
import { endNode } from './end.ts';
import { forkNode } from './fork.ts';
import { joinNode } from './join.ts';
import { llmNode } from './llm.ts';
import { loopEndNode, loopStartNode } from './loop.ts';
import { routeNode } from './route.ts';
import { subgraphBoundaryNode } from './subgraph.ts';
import { toolNode } from './tool.ts';
import { userInteractionNode } from './user-interaction.ts';
import { variableNode } from './variable.ts';

/** START is absent: it creates its thread rather than loading one (see start.ts). */
export const NODE_BEHAVIOURS: Readonly<Record<Exclude<NodeType, 'START'>, NodeBehaviour>> = {
  END: endNode,
  VARIABLE: variableNode,
  CODE: codeNode,
  FORK: forkNode,
  JOIN: joinNode,
  ROUTE: routeNode,
  LOOP_START: loopStartNode,
  LOOP_END: loopEndNode,
  LLM: llmNode,
  TOOL: toolNode,
  USER_INTERACTION: userInteractionNode,
  CONTEXT_PROCESSOR: contextProcessorNode,
  SUBGRAPH: subgraphBoundaryNode,
};
