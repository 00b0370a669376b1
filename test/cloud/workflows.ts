/**
 * The workflows the cloud suite deploys: every example, every `test/fixtures/valid` workflow (ids
 * prefixed `fixture-`, since a fixture may share an example's id), the LocalStack approval workflow and
 * the suite's own (a timed-out interaction, a failing branch). `tsx test/cloud/workflows.ts <dir>`
 * writes them as one folder for `cdk synth -c stepthread:workflowsDir=<dir>`.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseWorkflowText } from '../../cli/load-workflow.ts';
import { listWorkflowFiles } from '../../infra/load-workflows.ts';
import { promptChainData } from '../support/prompt-chain.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');

const SOURCES: { dir: string; idPrefix: string }[] = [
  { dir: 'examples', idPrefix: '' },
  { dir: 'test/fixtures/valid', idPrefix: 'fixture-' },
  { dir: 'test/localstack/workflows', idPrefix: '' },
  { dir: 'test/cloud/workflows', idPrefix: '' },
];

/** Each workflow file's data, by the file name it gets in the deployed folder. */
export function cloudWorkflowFiles(): Map<string, Record<string, unknown>> {
  const files = new Map<string, Record<string, unknown>>();
  for (const { dir, idPrefix } of SOURCES) {
    for (const path of listWorkflowFiles(join(ROOT, dir))) {
      const parsed = parseWorkflowText(readFileSync(path, 'utf8'), path);
      if (parsed.kind !== 'loaded') throw new Error(`cannot read ${path}`);
      const { $schema: _schema, ...data } = parsed.data as Record<string, unknown>;
      const id = `${idPrefix}${String(data.id)}`;
      files.set(`${id}.json`, { ...data, id });
    }
  }
  // Issue 30's "done when": 2,000 LLM nodes with 2 KB prompts; its definition deploys from S3.
  files.set('prompt-chain.json', promptChainData(2_000));
  return files;
}

export function writeCloudWorkflows(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const [file, data] of cloudWorkflowFiles()) {
    writeFileSync(join(dir, basename(file)), `${JSON.stringify(data, null, 2)}\n`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: tsx test/cloud/workflows.ts <dir>');
  writeCloudWorkflows(resolve(dir));
}
