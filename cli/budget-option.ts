/** `--budget '{"maxTokens": …, "maxCostUsd": …, "maxToolCalls": …}'` of `run` and `start`: a run's own budget. */

import { StepthreadError } from '../engine/errors.ts';
import type { Budget } from '../engine/model/schema.ts';
import { parseBudget } from '../functions/nodes/run-budget.ts';
import { type CliIo, EXIT } from './io.ts';

export const BUDGET_OPTION_HELP =
  'this run\'s budget, each limit over the workflow\'s: {"maxTokens": n, "maxCostUsd": dollars, "maxToolCalls": n}, each optional';

/** The budget given, undefined when none; a budget that is none is INVALID_BUDGET, a usage error (exit 2). */
export function budgetOption(
  raw: string | undefined,
  io: CliIo,
): { ok: true; value: Budget | undefined } | { ok: false; exitCode: number } {
  if (raw === undefined) return { ok: true, value: undefined };
  try {
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new StepthreadError('INVALID_BUDGET', `--budget is not valid JSON (${(error as Error).message})`);
    }
    return { ok: true, value: parseBudget(value) };
  } catch (error) {
    if (!(error instanceof StepthreadError)) throw error;
    io.stderr(`stepthread: ${error.code}: ${error.message}\n`);
    return { ok: false, exitCode: EXIT.usage };
  }
}
