/**
 * What LLM's function serves: `execute` runs the request (ending uncommitted, its envelope marked, when
 * a tool call waits for approval); `approval` is the waitForTaskToken Task that records the question
 * with its token (see nodes/tool-approval.ts).
 */
import { llmNode } from '../../nodes/llm.ts';
import { requestApproval, withApprovals } from '../../nodes/tool-approval.ts';
import { type ActionTable, stepOf } from '../dispatch-table.ts';

export const LLM_ACTIONS: ActionTable = {
  execute: withApprovals(stepOf(llmNode)),
  approval: requestApproval,
};
