/**
 * Limits only a deploy meets, checked from the workflow alone so that `validate` and `compile` can warn
 * and the deploy can refuse naming the file, before CloudFormation sees anything:
 * - an EventBridge event pattern holds at most 2,048 characters (DEPLOY_LIMIT_EXCEEDED: the workflow
 *   still runs locally).
 * A state machine's definition sits in its stack's template as one JSON string (its quotes escaped),
 * and a template may hold 1 MB: a definition that fits (definitionFitsTemplate) stays there, in a
 * nested stack of its own when it is large; one that does not is deployed from S3 instead
 * (DefinitionS3Location, infra/workflow.ts), so no definition Step Functions takes is refused for it.
 */
import { compileWorkflow } from '../asl/compile.ts';
import { type CodedError, StepthreadError } from '../errors.ts';
import type { Workflow } from '../model/schema.ts';
import { codedError } from './report.ts';

/** EventBridge's quota on one rule's event pattern. */
export const MAX_EVENT_PATTERN_CHARS = 2_048;
/** CloudFormation's quota on a template uploaded through S3 (nested stacks are), with a margin. */
export const MAX_TEMPLATE_BYTES = 1_000_000;
/** What a workflow's other resources (role, policy, logs, output) take in its template, rounded up. */
export const WORKFLOW_RESOURCES_BYTES = 12_000;
/** Each trigger adds a rule with its pattern (counted on its own) and its target. */
export const TRIGGER_RESOURCES_BYTES = 1_500;
/** In the template each function ARN is an `Fn::GetAtt` element of the definition's Fn::Join. */
const FUNCTION_REFERENCE_BYTES = 120;

/**
 * What the definition takes in a CloudFormation template: its text as a JSON string (quotes and
 * backslashes escaped), split at each function placeholder into an Fn::Join element.
 */
export function templateDefinitionBytes(definitionText: string): number {
  const placeholders = definitionText.match(/\$\{Fn_[A-Z_]+\}/g)?.length ?? 0;
  return utf8Bytes(JSON.stringify(definitionText)) + placeholders * FUNCTION_REFERENCE_BYTES;
}

/**
 * Whether the definition fits in a 1 MB template beside its workflow's other resources (the app gives
 * a workflow that large a nested stack of its own); else the deploy puts it in S3.
 */
export function definitionFitsTemplate(workflow: Workflow, definitionText: string): boolean {
  const room =
    MAX_TEMPLATE_BYTES -
    WORKFLOW_RESOURCES_BYTES -
    (workflow.triggers?.length ?? 0) * TRIGGER_RESOURCES_BYTES;
  return templateDefinitionBytes(definitionText) <= room;
}

/**
 * DEPLOY_LIMIT_EXCEEDED for each limit a deploy of this workflow would pass. Its compiled definition no
 * longer matters (one too large for a template deploys from S3); the parameter stays for the callers.
 */
export function deployLimitProblems(workflow: Workflow, _definition?: unknown): CodedError[] {
  const problems: CodedError[] = [];
  (workflow.triggers ?? []).forEach((trigger, index) => {
    const chars = JSON.stringify(trigger.eventPattern).length;
    if (chars > MAX_EVENT_PATTERN_CHARS) {
      problems.push(
        codedError(
          'DEPLOY_LIMIT_EXCEEDED',
          `trigger ${index + 1}'s eventPattern is ${chars.toLocaleString('en-US')} characters as JSON, over EventBridge's limit of ${MAX_EVENT_PATTERN_CHARS.toLocaleString('en-US')}; match on fewer values (a prefix match, or one field the producer sets for this workflow)`,
          ['triggers', index, 'eventPattern'],
        ),
      );
    }
  });
  return problems;
}

/**
 * One compile of a valid workflow: what the compiler refuses (`errors`, DEFINITION_TOO_LARGE above all),
 * else the deploy limits its definition passes (`deploy`, DEPLOY_LIMIT_EXCEEDED).
 */
export function compiledProblems(workflow: Workflow): { errors: CodedError[]; deploy: CodedError[] } {
  try {
    return { errors: [], deploy: deployLimitProblems(workflow, compileWorkflow(workflow).definition) };
  } catch (error) {
    if (error instanceof StepthreadError) return { errors: [error.toJSON()], deploy: [] };
    throw error;
  }
}

function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}
