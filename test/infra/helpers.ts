/** Shared set-up for the infra tests: a stand-in project root and a synthesised stack. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { NODE_TYPES } from '../../engine/model/schema.ts';
import { HANDLER_SPECS } from '../../infra/handler-registry.ts';
import { type LoadedWorkflow, loadWorkflowsFromDir } from '../../infra/load-workflows.ts';
import { addNagChecks } from '../../infra/nag.ts';
import { StepthreadStack, type StepthreadStackProps } from '../../infra/stack.ts';

/**
 * A project root holding one trivial module per handler entry, so the synth tests exercise infra alone
 * (bundling is skipped anyway) whatever state functions/handlers is in.
 */
export function stubProjectRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'stepthread-infra-'));
  writeFileSync(join(root, 'package-lock.json'), '{}');
  for (const type of NODE_TYPES) {
    const file = join(root, HANDLER_SPECS[type].entry);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, 'export const handler = async (event: unknown) => event;\n');
  }
  return root;
}

/** Every workflow the synth tests deploy: the examples plus the infra and LocalStack fixtures. */
export function testWorkflows(): LoadedWorkflow[] {
  return ['examples', 'test/infra/workflows', 'test/localstack/workflows'].flatMap((dir) =>
    loadWorkflowsFromDir(dir),
  );
}

/** An app that skips bundling (fast) and runs cdk-nag, as `cdk synth` does. */
export function testApp(outdir?: string): App {
  return new App({ context: { 'aws:cdk:bundling-stacks': [] }, ...(outdir ? { outdir } : {}) });
}

export function buildTestStack(
  overrides: Partial<StepthreadStackProps> = {},
  app: App = testApp(),
): { app: App; stack: StepthreadStack } {
  const stack = new StepthreadStack(app, 'Stepthread', {
    workflows: testWorkflows(),
    projectRoot: stubProjectRoot(),
    ...overrides,
  });
  addNagChecks(app);
  return { app, stack };
}
