import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  renderWorkflowJsonSchema,
  schemaReference,
  WORKFLOW_SCHEMA_PATH,
} from '../../../engine/model/json-schema.ts';

const root = join(import.meta.dirname, '..', '..', '..');

describe('workflow JSON Schema', () => {
  it('matches the committed engine/model/workflow.schema.json (run `npm run schema` if this fails)', () => {
    const committed = readFileSync(join(root, WORKFLOW_SCHEMA_PATH), 'utf8');
    expect(renderWorkflowJsonSchema() === committed, 'run npm run schema').toBe(true);
  });

  it('is stable from one generation to the next', () => {
    expect(renderWorkflowJsonSchema()).toBe(renderWorkflowJsonSchema());
  });

  it('describes the node types and allows a $schema reference', () => {
    const schema = JSON.parse(renderWorkflowJsonSchema());
    expect(schema.required).toEqual(expect.arrayContaining(['id', 'version', 'nodes']));
    expect(schema.properties.$schema).toEqual({ type: 'string' });
    expect(JSON.stringify(schema)).toContain('"CONTEXT_PROCESSOR"');
  });

  it('gives the relative $schema reference for a file directory', () => {
    expect(schemaReference('examples')).toBe('../engine/model/workflow.schema.json');
    expect(schemaReference('test/fixtures/valid')).toBe('../../../engine/model/workflow.schema.json');
  });

  it("refuses maxSteps and budget in a SUBGRAPH's child workflow, as validate does, and allows them at the top", () => {
    const validateFile = new Ajv2020({ strict: false }).compile(JSON.parse(renderWorkflowJsonSchema()));
    const workflow = JSON.parse(readFileSync(join(root, 'test/fixtures/valid/subgraph.json'), 'utf8'));
    expect(validateFile(workflow), JSON.stringify(validateFile.errors)).toBe(true);
    expect(validateFile({ ...workflow, maxSteps: 50, budget: { maxTokens: 1000 } })).toBe(true);
    const subgraph = workflow.nodes.findIndex((node: { type: string }) => node.type === 'SUBGRAPH');
    for (const key of ['maxSteps', 'budget']) {
      const edited = structuredClone(workflow);
      edited.nodes[subgraph].config.workflow[key] = key === 'budget' ? { maxTokens: 10 } : 5;
      expect(validateFile(edited), key).toBe(false);
      expect(
        validateFile.errors?.some((error) => error.instancePath.endsWith(`/config/workflow/${key}`)),
      ).toBe(true);
    }
  });
});
