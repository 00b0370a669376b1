/**
 * CODE: the node's JavaScript runs in the sandbox (QuickJS in a killable worker: time and memory
 * limits, no I/O). `input` is a JSON snapshot of the variables visible here (by name, inner scopes
 * shadowing outer ones, as in expressions) with each of the node's `inputs` (name → expression over
 * the expression scope) on top, so an input of the same name wins over a variable. The returned
 * JSON is the node's output and, when asked, goes to `outputVariable`. Sandbox failures
 * (CODE_TIMEOUT, CODE_MEMORY_LIMIT, CODE_ERROR, ...) are the node's coded failure, naming it.
 * What the code printed goes on the step's result (`logs`), failed or not.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { evaluate } from '../../engine/expression/index.ts';
import { codeConfigSchema } from '../../engine/model/schema.ts';
import { deepCopy, variableView } from '../../engine/thread/index.ts';
import type { NodeBehaviour, StepContext } from '../handlers/pipeline.ts';
import { runCode } from '../sandbox/index.ts';
import { maxValueBytes } from '../stores/value-refs.ts';
import { sandboxLogsOf } from '../tools/tool-logs.ts';
import { parseConfig } from './config.ts';
import { storeOutput } from './output-variable.ts';

function codeInput(ctx: StepContext, inputs: Readonly<Record<string, string>>): Record<string, unknown> {
  const { node, thread } = ctx;
  const input: Record<string, unknown> = deepCopy(variableView(thread.variables));
  const scope = ctx.scope();
  for (const [name, expression] of Object.entries(inputs)) {
    let value: unknown;
    try {
      value = evaluate(expression, scope);
    } catch (error) {
      if (!(error instanceof StepthreadError)) throw error;
      throw new StepthreadError(error.code, `node ${node.id}: input "${name}": ${error.message}`, {
        nodeId: node.id,
        cause: error,
      });
    }
    // defineProperty: an input named `__proto__` stays plain data.
    Object.defineProperty(input, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return input;
}

export const codeNode: NodeBehaviour = {
  async logic(ctx) {
    const { node, deps } = ctx;
    const config = parseConfig(codeConfigSchema, node);
    const request = {
      code: config.code,
      input: codeInput(ctx, config.inputs ?? {}),
      // Any output a step can store (by reference past a few hundred bytes), as a code tool's.
      maxOutputBytes: maxValueBytes(),
      ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
      ...(config.memoryLimitMb === undefined ? {} : { memoryLimitMb: config.memoryLimitMb }),
    };
    const result = await runCode(request).catch((error: unknown) => {
      // Limits the sandbox refuses are a bad config of this node.
      if (!(error instanceof StepthreadError)) throw error;
      throw new StepthreadError(error.code, `node ${node.id}: ${error.message}`, { nodeId: node.id });
    });
    // The run ended while the code ran: abandon the step rather than commit into a finished run.
    deps.signal?.throwIfAborted();
    // Kept with the result whether the code returned or threw: prints before a throw explain it.
    const logs = sandboxLogsOf(result);
    if (logs) ctx.logs = logs;
    if (!result.ok) {
      // The sandbox's message already names the line of a thrown error.
      const { code, message } = result.error;
      const hint = unboundNameHint(code, message, request.input);
      throw new StepthreadError(code, `node ${node.id}: ${message}${hint}`, { nodeId: node.id });
    }
    const events =
      config.outputVariable === undefined
        ? []
        : [storeCodeOutput(ctx, config.outputVariable, result.output, config.code)];
    return { output: result.output, events };
  },
};

/**
 * Stores the output in outputVariable. Code that returns nothing gives null, which a typed variable
 * refuses: then INVALID_VARIABLE says so, as "given null" alone does not point at a missing return.
 */
function storeCodeOutput(ctx: StepContext, name: string, output: unknown, code: string) {
  try {
    return storeOutput(ctx, name, output);
  } catch (error) {
    if (!(output === null && error instanceof StepthreadError && error.code === 'INVALID_VARIABLE'))
      throw error;
    // A guess from the text (a `return` in a comment counts), choosing only how the hint is put.
    const why = /\breturn\b/.test(code)
      ? "the code returned null or nothing (a CODE node's output is what its code returns)"
      : "the code returned nothing: it has no return statement (a CODE node's output is what its code returns: add `return <value>`)";
    throw new StepthreadError(error.code, `${error.message}: ${why}`, { nodeId: ctx.node.id, cause: error });
  }
}

/**
 * A CODE body reading `nodes`, `thread` or a variable by its bare name, as a `{{ }}` template or an
 * expression would: in the sandbox only `input` exists, so say how those values get there. Other
 * names (`fetch`, `require`) are simply not there.
 */
function unboundNameHint(code: string, message: string, input: Record<string, unknown>): string {
  const name =
    code === 'CODE_ERROR' ? /^ReferenceError: '([^']+)' is not defined/.exec(message)?.[1] : undefined;
  if (name === undefined) return '';
  if (Object.hasOwn(input, name)) return `; a CODE node sees its variables and inputs as input.${name}`;
  if (name === 'nodes' || name === 'thread')
    return `; a CODE node sees only \`input\`: pass what it needs through "inputs", such as {"x": "${name === 'nodes' ? 'nodes.<id>' : 'thread.id'}"}, and read input.x`;
  return '';
}
