/** Every workflow the ASL tests compile: the examples, the valid fixtures and the hand-written shapes. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import {
  type CompiledWorkflow,
  type CompileOptions,
  compileWorkflow as compile,
} from '../../../engine/asl/index.ts';
import { isNodeRef, type NodeTable } from '../../../engine/asl/node-table.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import { ownWorkflows } from './workflows.ts';

const root = join(import.meta.dirname, '..', '..', '..');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return filesUnder(path);
      return /\.(json|ya?ml)$/.test(entry.name) ? [path] : [];
    })
    .sort();
}

export function loadWorkflow(path: string): Workflow {
  const text = readFileSync(path, 'utf8');
  return (path.endsWith('.json') ? JSON.parse(text) : parse(text)) as Workflow;
}

export const exampleFiles = filesUnder(join(root, 'examples'));
export const fixtureFiles = filesUnder(join(root, 'test', 'fixtures', 'valid'));

/** name → workflow, for every workflow the compiler must accept. */
export const corpus: ReadonlyArray<readonly [string, Workflow]> = [
  ...[...exampleFiles, ...fixtureFiles].map((file) => [relative(root, file), loadWorkflow(file)] as const),
  ...Object.entries(ownWorkflows).map(([name, workflow]) => [`own:${name}`, workflow] as const),
];

const tables = new Map<string, NodeTable>();

/** engine/asl's compileWorkflow, keeping each node table so that `describedNode` can read it. */
export function compileWorkflow(workflow: Workflow, options?: CompileOptions): CompiledWorkflow {
  const result = compile(workflow, options);
  tables.set(result.nodeTable.ref, JSON.parse(result.nodeTable.json) as NodeTable);
  return result;
}

/** A Task's `node` as its handler sees it: a `{ id, ref }` reference looked up in its node table. */
export function describedNode(node: unknown): unknown {
  if (!isNodeRef(node)) return node;
  const table = tables.get(node.ref);
  if (table === undefined) throw new Error(`no node table ${node.ref} was compiled here`);
  return table.nodes[node.id];
}

const compiled = new Map<string, CompiledWorkflow>();

/** Compiles each corpus entry once per test file. */
export function compiledOf(name: string): CompiledWorkflow {
  let result = compiled.get(name);
  if (!result) {
    const workflow = corpus.find(([candidate]) => candidate === name)?.[1];
    if (!workflow) throw new Error(`no corpus workflow ${name}`);
    result = compileWorkflow(workflow);
    compiled.set(name, result);
  }
  return result;
}
