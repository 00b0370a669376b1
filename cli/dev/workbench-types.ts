/**
 * What the workbench routes of `stepthread dev` answer (workbench-reads.ts reads them), in a module
 * of types only so the console shares them.
 */
import type { Message } from '../../engine/model/schema.ts';
import type { NodeInput } from '../../engine/node-input.ts';
import type { StepDigest } from '../../engine/thread/step-alignment.ts';
import type { DiffReport, KeptStep } from '../diff-report.ts';

export interface StepInput extends NodeInput {
  threadId: string;
  step: number;
  nodeId: string;
  nodeType: string;
  /** The tool calls the step made (an LLM node's), with their arguments and what each gave back. */
  toolCalls: { id: string; name: string; arguments: unknown; result?: string }[];
  /** False when the workflow it ran is not known here (nothing rendered, the reads unknown). */
  definitionKnown: boolean;
}

/** A step of one side of a comparison: its digest (what `diff` aligns) and what it gave. */
export type ComparedStep = StepDigest & KeptStep;

export interface Comparison {
  /** As `stepthread diff --json`. */
  diff: DiffReport;
  /** Each side's steps after those they share (the first MAX_COMPARED_STEPS), and its conversation now. */
  a: { threadId: string; steps: ComparedStep[]; stepsNotShown: number; messages: Message[] };
  b: { threadId: string; steps: ComparedStep[]; stepsNotShown: number; messages: Message[] };
}
